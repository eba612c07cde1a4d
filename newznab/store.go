package newznab

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/edgeindex/edgeindex/release"
)

// Sentinel errors a Store returns, tested with errors.Is. The handler
// answers each with its Newznab error code.
var (
	ErrBadKey       = errors.New("incorrect user credentials") // 100
	ErrSuspended    = errors.New("account suspended")          // 101
	ErrRequestLimit = errors.New("request limit reached")      // 500
	ErrGrabLimit    = errors.New("download limit reached")     // 501
)

// Store is what the handler reads and counts. sqlstore implements it on
// SQLite and PostgreSQL.
type Store interface {
	release.Searcher
	// ReleaseDetails returns one release, or release.ErrNotFound, with
	// its first files files by name (none when files is 0), each without
	// its Parts and with Seen counting them: what a details page shows,
	// read without reading the parts.
	ReleaseDetails(ctx context.Context, id int64, files int) (release.Release, error)
	// ReleaseFiles calls each with release id's files by name, each with
	// its parts, holding only a few files' parts at once and no
	// transaction while each runs, so an NZB of any size is streamed in
	// bounded memory. An unknown release is release.ErrNotFound; an
	// error of each ends it, returned.
	ReleaseFiles(ctx context.Context, id int64, each func(release.File) error) error
	// UseKey finds the user whose key hashes to keyHash (HashKey) and
	// counts one request for the UTC day of now. An unknown hash is
	// ErrBadKey, a suspended user ErrSuspended; a user whose requests
	// that day reached the limit is ErrRequestLimit and is not counted.
	// The Account it returns counts this request.
	UseKey(ctx context.Context, keyHash string, now time.Time) (Account, error)
	// Grab counts a download of release id's NZB by user for the UTC day
	// of now: the user's grabs and the release's, in one transaction. A
	// user whose grabs that day reached the limit is ErrGrabLimit and
	// nothing is counted; an unknown release is release.ErrNotFound.
	Grab(ctx context.Context, user string, id int64, now time.Time) (Account, error)
}

// Users manages the users and their keys; sqlstore implements it.
type Users interface {
	// AddUser adds a user; an existing name or key hash is
	// edgeindex.ErrConflict.
	AddUser(ctx context.Context, u User) error
	// RemoveUser removes a user and its counts; an unknown name is
	// edgeindex.ErrNotFound.
	RemoveUser(ctx context.Context, name string) error
	// SuspendUser suspends a user (its key answers ErrSuspended) or, with
	// false, lets it in again; an unknown name is edgeindex.ErrNotFound.
	SuspendUser(ctx context.Context, name string, suspended bool) error
	// Accounts lists the users by name with their counts for the UTC day
	// of now.
	Accounts(ctx context.Context, now time.Time) ([]Account, error)
}

// User is a user as it is added.
type User struct {
	Name    string
	KeyHash string // HashKey of the key; the key itself is never stored
	// RequestLimit and GrabLimit are the daily limits; 0: none.
	RequestLimit, GrabLimit int64
}

// Account is a user with its day's counts.
type Account struct {
	Name                    string
	RequestLimit, GrabLimit int64 // 0: none
	Requests, Grabs         int64 // used on the day asked for
	Suspended               bool
	Created                 time.Time
}

// NewKey returns a new random API key: 128 bits as 32 hex digits, the form
// Newznab clients expect.
func NewKey() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("newznab key: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// HashKey returns the hex SHA-256 of a key: the only form a store keeps.
func HashKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}
