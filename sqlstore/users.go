package sqlstore

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/newznab"
	"github.com/edgeindex/edgeindex/release"
)

var (
	_ newznab.Store = (*Store)(nil)
	_ newznab.Users = (*Store)(nil)
)

// MaxUserName bounds a user's name, in bytes.
const MaxUserName = 64

// userRow is a row of api_users.
type userRow struct {
	Name         string `db:"name"`
	KeyHash      string `db:"key_hash"`
	RequestLimit int64  `db:"request_limit"`
	GrabLimit    int64  `db:"grab_limit"`
	Suspended    bool   `db:"suspended"`
	CreatedUS    int64  `db:"created_us"`
}

func (u userRow) account(requests, grabs int64) newznab.Account {
	return newznab.Account{Name: u.Name, RequestLimit: u.RequestLimit, GrabLimit: u.GrabLimit,
		Requests: requests, Grabs: grabs, Suspended: u.Suspended, Created: time.UnixMicro(u.CreatedUS).UTC()}
}

const userCols = "name, key_hash, request_limit, grab_limit, suspended, created_us"

// day is the api_usage key of t: its UTC date.
func day(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// checkUserName reports a name that is empty, too long, not valid UTF-8,
// or has a space or an unprintable character.
func checkUserName(name string) error {
	if name == "" || len(name) > MaxUserName || !utf8.ValidString(name) {
		return edgeindex.Invalidf("user name %q must be 1 to %d bytes of UTF-8", name, MaxUserName)
	}
	for _, r := range name {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return edgeindex.Invalidf("user name %q must be printable, without spaces", name)
		}
	}
	return nil
}

// checkKeyHash reports a hash that is not HashKey's form: 64 lower case
// hex digits.
func checkKeyHash(h string) error {
	if len(h) != 64 {
		return edgeindex.Invalidf("key hash must be 64 hex digits, not %d bytes", len(h))
	}
	for _, c := range []byte(h) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return edgeindex.Invalidf("key hash must be 64 lower case hex digits")
		}
	}
	return nil
}

// AddUser implements newznab.Users.
func (s *Store) AddUser(ctx context.Context, u newznab.User) error {
	if err := checkUserName(u.Name); err != nil {
		return err
	}
	if err := checkKeyHash(u.KeyHash); err != nil {
		return err
	}
	if u.RequestLimit < 0 || u.GrabLimit < 0 {
		return edgeindex.Invalidf("user %q: limits %d and %d must not be negative", u.Name, u.RequestLimit, u.GrabLimit)
	}
	// DO NOTHING on either unique key (the name, the hash): no row
	// written is a conflict, even between two adds racing.
	res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO api_users (`+userCols+`) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT DO NOTHING`), u.Name, u.KeyHash, u.RequestLimit, u.GrabLimit, false, s.nowMicros())
	if err != nil {
		return fmt.Errorf("add user %q: %w", u.Name, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("add user %q: %w", u.Name, err)
	} else if n == 0 {
		return fmt.Errorf("add user %q: %w: the name or the key is taken", u.Name, edgeindex.ErrConflict)
	}
	return nil
}

// RemoveUser implements newznab.Users.
func (s *Store) RemoveUser(ctx context.Context, name string) error {
	return s.tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q("DELETE FROM api_usage WHERE user_name = ?"), name); err != nil {
			return fmt.Errorf("remove user %q: %w", name, err)
		}
		return s.oneUser(tx.ExecContext(ctx, s.q("DELETE FROM api_users WHERE name = ?"), name))(name, "remove")
	})
}

// SuspendUser implements newznab.Users.
func (s *Store) SuspendUser(ctx context.Context, name string, suspended bool) error {
	return s.oneUser(s.db.ExecContext(ctx, s.q("UPDATE api_users SET suspended = ? WHERE name = ?"), suspended, name))(name, "suspend")
}

// oneUser checks that a statement changed one user.
func (s *Store) oneUser(res sql.Result, err error) func(name, what string) error {
	return func(name, what string) error {
		if err != nil {
			return fmt.Errorf("%s user %q: %w", what, name, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("%s user %q: %w", what, name, err)
		}
		if n == 0 {
			return fmt.Errorf("%s user %q: %w", what, name, edgeindex.ErrNotFound)
		}
		return nil
	}
}

// Accounts implements newznab.Users.
func (s *Store) Accounts(ctx context.Context, now time.Time) ([]newznab.Account, error) {
	var rows []struct {
		userRow
		Requests int64 `db:"requests"`
		Grabs    int64 `db:"grabs"`
	}
	if err := s.rdb.SelectContext(ctx, &rows, s.q(`SELECT `+prefixed("u.", userCols)+`,
		COALESCE(a.requests, 0) AS requests, COALESCE(a.grabs, 0) AS grabs
		FROM api_users u LEFT JOIN api_usage a ON a.user_name = u.name AND a.day = ? ORDER BY u.name`), day(now)); err != nil {
		return nil, fmt.Errorf("accounts: %w", err)
	}
	out := make([]newznab.Account, len(rows))
	for i, r := range rows {
		out[i] = r.account(r.Requests, r.Grabs)
	}
	// By name byte by byte, as SQLite orders them and PostgreSQL's
	// collation may not.
	slices.SortFunc(out, func(a, b newznab.Account) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// countTx runs fn in a transaction that counts requests or grabs. On
// PostgreSQL it commits without waiting for the WAL to reach the disk
// (synchronous_commit off, for this transaction only): every API request
// commits one of these, and the wait would be most of its cost. A crash
// can lose the counts of the last moments (a user gets a few requests
// more that day), never a release nor anything else, since only this
// transaction skips the wait, and it is still atomic.
func (s *Store) countTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	return txOn(ctx, s.frontWriter(), nil, func(tx *sqlx.Tx) error {
		if s.d.asyncCommits() {
			if _, err := tx.ExecContext(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
				return err
			}
		}
		return fn(tx)
	})
}

// UseKey implements newznab.Store. The count and the limit are one
// upsert: it adds the request only while the day's requests are below
// the limit, under the row's lock, so coordinators that share the
// database let exactly the limit through.
func (s *Store) UseKey(ctx context.Context, keyHash string, now time.Time) (newznab.Account, error) {
	var acct newznab.Account
	err := s.countTx(ctx, func(tx *sqlx.Tx) error {
		var u userRow
		err := tx.GetContext(ctx, &u, s.q("SELECT "+userCols+" FROM api_users WHERE key_hash = ?"), keyHash)
		if errors.Is(err, sql.ErrNoRows) || err == nil && subtle.ConstantTimeCompare([]byte(u.KeyHash), []byte(keyHash)) != 1 {
			return newznab.ErrBadKey
		}
		if err != nil {
			return err
		}
		acct, err = s.count(ctx, tx, u, now, false)
		return err
	})
	return accountOr(acct, err, "use key")
}

// Grab implements newznab.Store. The user's grab is an upsert that adds
// it only below the limit (as UseKey's requests); the release's is an
// update of its row; both commit together or not at all. An unknown user
// is newznab.ErrBadKey, a suspended one newznab.ErrSuspended.
func (s *Store) Grab(ctx context.Context, user string, id int64, now time.Time) (newznab.Account, error) {
	var acct newznab.Account
	err := s.countTx(ctx, func(tx *sqlx.Tx) error {
		var u userRow
		err := tx.GetContext(ctx, &u, s.q("SELECT "+userCols+" FROM api_users WHERE name = ?"), user)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: no user %q", newznab.ErrBadKey, user)
		}
		if err != nil {
			return err
		}
		if acct, err = s.count(ctx, tx, u, now, true); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, s.q("UPDATE releases SET grabs = grabs + 1 WHERE id = ?"), id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			acct = newznab.Account{}
			return fmt.Errorf("%w: no release %d", release.ErrNotFound, id)
		}
		return nil
	})
	return accountOr(acct, err, "grab")
}

// count counts one request of u (a grab, when grab is set) for the day of
// now, in tx: an upsert that adds it only below u's limit. A suspended u
// is newznab.ErrSuspended, a spent limit newznab.ErrRequestLimit or
// ErrGrabLimit; then nothing is counted, and the account is the day's.
func (s *Store) count(ctx context.Context, tx *sqlx.Tx, u userRow, now time.Time, grab bool) (newznab.Account, error) {
	if u.Suspended {
		return u.account(0, 0), newznab.ErrSuspended
	}
	col, limit, spent := "requests", u.RequestLimit, newznab.ErrRequestLimit
	requests, grabs := 1, 0
	if grab {
		col, limit, spent = "grabs", u.GrabLimit, newznab.ErrGrabLimit
		requests, grabs = 0, 1
	}
	var c struct {
		Requests int64 `db:"requests"`
		Grabs    int64 `db:"grabs"`
	}
	err := tx.GetContext(ctx, &c, s.q(`INSERT INTO api_usage (user_name, day, requests, grabs) VALUES (?, ?, ?, ?)
		ON CONFLICT (user_name, day) DO UPDATE SET `+col+` = api_usage.`+col+` + 1
		WHERE CAST(? AS BIGINT) = 0 OR api_usage.`+col+` < ? RETURNING requests, grabs`), u.Name, day(now), requests, grabs, limit, limit)
	if errors.Is(err, sql.ErrNoRows) {
		acct, err := s.usage(ctx, tx, u, now)
		if err != nil {
			return newznab.Account{}, err
		}
		return acct, spent
	}
	if err != nil {
		return newznab.Account{}, err
	}
	return u.account(c.Requests, c.Grabs), nil
}

// accountOr returns what UseKey and Grab return: the account, with the
// error wrapped; an error that does not come with the account (not a
// suspension or a spent limit) returns the zero Account.
func accountOr(acct newznab.Account, err error, what string) (newznab.Account, error) {
	if err == nil {
		return acct, nil
	}
	if !isAPIError(err) {
		acct = newznab.Account{}
	}
	return acct, fmt.Errorf("%s: %w", what, err)
}

// usage reads u's account for the day of now.
func (s *Store) usage(ctx context.Context, tx *sqlx.Tx, u userRow, now time.Time) (newznab.Account, error) {
	var c struct {
		Requests int64 `db:"requests"`
		Grabs    int64 `db:"grabs"`
	}
	err := tx.GetContext(ctx, &c, s.q("SELECT requests, grabs FROM api_usage WHERE user_name = ? AND day = ?"), u.Name, day(now))
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return newznab.Account{}, err
	}
	return u.account(c.Requests, c.Grabs), nil
}

// isAPIError reports the errors that come with the user's account.
func isAPIError(err error) bool {
	return errors.Is(err, newznab.ErrSuspended) || errors.Is(err, newznab.ErrRequestLimit) || errors.Is(err, newznab.ErrGrabLimit)
}
