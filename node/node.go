package node

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/edgeindex/edgeindex"
)

// Node is a worker machine known to the coordinator.
type Node struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	LastSeen  time.Time `json:"lastSeen"`
}

// ValidName checks a node name: 1 to 64 bytes of letters, digits, '.', '-'
// and '_'. It wraps edgeindex.ErrInvalid.
func ValidName(name string) error {
	if name == "" || len(name) > 64 {
		return edgeindex.Invalidf("node name must be 1 to 64 characters, not %d", len(name))
	}
	for _, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_'
		if !ok {
			return edgeindex.Invalidf("node name %q: only letters, digits, '.', '-' and '_'", name)
		}
	}
	return nil
}

// NewToken returns a random token of 256 bits, hex encoded.
func NewToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("node token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// HashToken returns the SHA-256 of a token: the only form a store keeps.
func HashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// Store keeps nodes and the hashes of their tokens.
type Store interface {
	// AddNode adds a node with its token's hash; an existing name is edgeindex.ErrConflict.
	AddNode(ctx context.Context, name string, tokenHash []byte) (Node, error)
	// RemoveNode revokes a node; its range and lane leases go back to
	// pending, keeping next. edgeindex.ErrNotFound for an unknown name.
	RemoveNode(ctx context.Context, name string) error
	// Authenticate returns the node whose token hashes to tokenHash, and
	// marks it seen; edgeindex.ErrNotFound when none does.
	Authenticate(ctx context.Context, tokenHash []byte) (Node, error)
	// Node returns the node named name, or edgeindex.ErrNotFound.
	Node(ctx context.Context, name string) (Node, error)
	// Nodes lists every node by name.
	Nodes(ctx context.Context) ([]Node, error)
}
