package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// adminToken returns EDGEINDEX_ADMIN_TOKEN, or the token in
// <data>/admin.token, made on the first start with mode 0600. An existing
// admin.token is tightened to 0600 either way.
func (m *Main) adminToken() (string, error) {
	if err := m.dataDir(); err != nil {
		return "", err
	}
	path := filepath.Join(m.Data, "admin.token")
	if err := tighten(path, 0o600); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	if t := os.Getenv("EDGEINDEX_ADMIN_TOKEN"); t != "" {
		return t, nil
	}
	if b, err := os.ReadFile(path); err == nil {
		if t := strings.TrimSpace(string(b)); t != "" {
			return t, nil
		}
	}
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	t := hex.EncodeToString(b[:])
	if err := os.WriteFile(path, []byte(t+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("admin token: %w", err)
	}
	return t, nil
}

// maxID is the longest --id.
const maxID = 200

// ownerID returns --id, or the identity kept in <data>/coordinator.id,
// made on the first start as "<hostname>-<random>". It names this
// coordinator as the owner of chunk claims, so it must not change while the
// spool it fetched into is there: the data directory holds both, so the
// identity survives restarts, --addr changes and a new hostname, and a new
// (empty) data directory is a new owner.
func (m *Main) ownerID() (string, error) {
	if m.ID != "" {
		return m.ID, checkID(m.ID)
	}
	path := filepath.Join(m.Data, "coordinator.id")
	if b, err := os.ReadFile(path); err == nil {
		id := strings.TrimSpace(string(b))
		if checkID(id) != nil {
			return "", fmt.Errorf("%s holds %q, not a coordinator id: remove it, or pass --id", path, id)
		}
		return id, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("coordinator id: %w", err)
	}
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r <= ' ' || r == 0x7f {
			return -1
		}
		return r
	}, host)
	if host == "" {
		host = "coordinator"
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := host + "-" + hex.EncodeToString(b[:])
	if len(id) > maxID {
		id = id[len(id)-maxID:]
	}
	if err := os.WriteFile(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("coordinator id: %w", err)
	}
	return id, nil
}

// checkID refuses an identity that is empty, too long or not printable.
func checkID(id string) error {
	if id == "" || len(id) > maxID || !utf8.ValidString(id) || strings.IndexFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return usagef("--id %q: 1 to %d printable bytes, no spaces", id, maxID)
	}
	return nil
}
