package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/edgeindex/edgeindex"
	"github.com/edgeindex/edgeindex/connlease"
)

var _ connlease.Store = (*Store)(nil)

// maxProvider bounds a provider's name.
const maxProvider = 200

// slotRow is a conn_slots row.
type slotRow struct {
	Provider string `db:"provider"`
	N        int    `db:"n"`
	Holder   string `db:"holder"`
	Token    int64  `db:"token"`
	Expires  int64  `db:"expires_us"`
}

func (r slotRow) slot() connlease.Lease {
	return connlease.Lease{Provider: r.Provider, N: r.N, Holder: r.Holder, Token: r.Token,
		Expires: time.UnixMicro(r.Expires).UTC()}
}

// takeSlotQuery leases the lowest free slot below the size. It runs in
// the transaction that locked the provider's conn_budgets row, so takers
// of one provider go one at a time on PostgreSQL too, and a resize cannot
// slip between the check of the size and the take.
const takeSlotQuery = `UPDATE conn_slots SET holder = ?, token = token + 1, expires_us = {now} + ?
	WHERE provider = ? AND n = (SELECT n FROM conn_slots WHERE provider = ? AND n < ? AND expires_us <= {now}
		ORDER BY n LIMIT 1)
	RETURNING provider, n, holder, token, expires_us`

// addSlotsQuery adds the rows of slots 0 to size−1 that are missing, free.
const addSlotsQuery = `WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n + 1 < ?)
	INSERT INTO conn_slots (provider, n, holder, token, expires_us)
	SELECT ?, n, '', 0, 0 FROM k WHERE true
	ON CONFLICT (provider, n) DO NOTHING`

// TakeSlot implements connlease.Store. The slot taken is the lowest one
// free; its token is one more than the slot's last.
//
// The provider's size is stored: the first take writes it (and the slots'
// rows, once), and a take with another size changes it only while no slot
// of the provider is taken; while one is, it fails with an error wrapping
// edgeindex.ErrConflict. So coordinators told different sizes for one
// account never hold more than the size stored first (the other is
// refused), and an operator resizes a budget by stopping its coordinators
// and starting them with the new size (or waiting a TTL after a crash).
func (s *Store) TakeSlot(ctx context.Context, provider string, size int, holder string, ttl time.Duration) (connlease.Lease, bool, error) {
	if err := checkSlotArgs(provider, holder); err != nil {
		return connlease.Lease{}, false, err
	}
	if size < 1 || size > connlease.MaxSize {
		return connlease.Lease{}, false, edgeindex.Invalidf("take slot: size %d: want 1 to %d", size, connlease.MaxSize)
	}
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return connlease.Lease{}, false, err
	}
	var out connlease.Lease
	var ok bool
	err = s.tx(ctx, func(tx *sqlx.Tx) error {
		now := s.now()
		if err := s.fitBudget(ctx, tx, provider, size, now); err != nil {
			return err
		}
		var r slotRow
		err := tx.GetContext(ctx, &r, s.q(takeSlotQuery), holder, now, ttlUS, provider, provider, size, now)
		if errors.Is(err, sql.ErrNoRows) {
			return s.want(ctx, tx, provider, holder, now)
		}
		if err != nil {
			return fmt.Errorf("take slot: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.q("DELETE FROM conn_wants WHERE provider = ? AND holder = ?"), provider, holder); err != nil {
			return fmt.Errorf("take slot: forget the want: %w", err)
		}
		out, ok = r.slot(), true
		return nil
	})
	if err != nil {
		return connlease.Lease{}, false, err
	}
	return out, ok, nil
}

// fitBudget makes provider's stored budget size, in the take's
// transaction, under the budget row's lock: it writes the size when none
// is stored, resizes the budget when it is another and no slot is taken
// (resizeBudget), and adds the rows of the slots below size that are
// missing when it wrote either.
func (s *Store) fitBudget(ctx context.Context, tx *sqlx.Tx, provider string, size int, now any) error {
	cur, err := s.budgetSize(ctx, tx, provider)
	if err != nil {
		return err
	}
	add := false
	if cur == 0 {
		if add, err = s.firstBudget(ctx, tx, provider, size); err != nil {
			return err
		}
		if cur = size; !add { // another taker wrote it first
			if cur, err = s.budgetSize(ctx, tx, provider); err != nil {
				return err
			}
		}
	}
	if cur != size {
		if err := s.resizeBudget(ctx, tx, provider, cur, size, now); err != nil {
			return err
		}
		add = true
	}
	if add {
		if _, err := tx.ExecContext(ctx, s.q(addSlotsQuery), size, provider); err != nil {
			return fmt.Errorf("take slot: add the slots: %w", err)
		}
	}
	return nil
}

// firstBudget writes provider's budget size, unless another taker wrote
// one first; it reports whether it wrote it.
func (s *Store) firstBudget(ctx context.Context, tx *sqlx.Tx, provider string, size int) (bool, error) {
	res, err := tx.ExecContext(ctx, s.q("INSERT INTO conn_budgets (provider, size) VALUES (?, ?) ON CONFLICT (provider) DO NOTHING"),
		provider, size)
	if err != nil {
		return false, fmt.Errorf("take slot: write the budget's size: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("take slot: write the budget's size: %w", err)
	}
	return n == 1, nil
}

// resizeBudget changes provider's budget from cur to size, while none of
// its slots is taken; while one is, it fails with an error wrapping
// edgeindex.ErrConflict.
func (s *Store) resizeBudget(ctx context.Context, tx *sqlx.Tx, provider string, cur, size int, now any) error {
	var taken int
	if err := tx.GetContext(ctx, &taken, s.q("SELECT COUNT(*) FROM conn_slots WHERE provider = ? AND expires_us > {now}"),
		provider, now); err != nil {
		return fmt.Errorf("take slot: %w", err)
	}
	if taken > 0 {
		return fmt.Errorf("take slot: the connection budget of %q is %d connections (%d held), not this coordinator's %d; "+
			"stop its coordinators to change it: %w", provider, cur, taken, size, edgeindex.ErrConflict)
	}
	if _, err := tx.ExecContext(ctx, s.q("UPDATE conn_budgets SET size = ? WHERE provider = ?"), size, provider); err != nil {
		return fmt.Errorf("take slot: resize the budget: %w", err)
	}
	return nil
}

// wantsKept is how long a want is kept: far past any holder's Poll, so a
// holder that stopped (or was renamed) leaves no row for long.
const wantsKept = time.Hour

// A Budget asks for the wants of up to 3 × connlease.MaxPoll: this fails
// to compile if wantsKept is shorter (counted in seconds, so that the
// length fits a 32-bit int).
var _ [(wantsKept - 3*connlease.MaxPoll) / time.Second]struct{}

// want records, in the take's transaction, that holder found every slot
// of provider taken, and forgets the wants older than wantsKept.
func (s *Store) want(ctx context.Context, tx *sqlx.Tx, provider, holder string, now any) error {
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO conn_wants (provider, holder, at_us) VALUES (?, ?, {now})
		ON CONFLICT (provider, holder) DO UPDATE SET at_us = excluded.at_us`), provider, holder, now); err != nil {
		return fmt.Errorf("take slot: record the want: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q("DELETE FROM conn_wants WHERE provider = ? AND at_us < {now} - ?"),
		provider, now, wantsKept.Microseconds()); err != nil {
		return fmt.Errorf("take slot: forget old wants: %w", err)
	}
	return nil
}

// Demand implements connlease.Store: the holders of provider's slots
// whose leases have not run out, and the holders that wanted one within
// the last within (by the store's clock), by holder.
func (s *Store) Demand(ctx context.Context, provider string, within time.Duration) ([]connlease.Holding, error) {
	if len(provider) > maxProvider {
		return nil, edgeindex.Invalidf("demand: a provider name of at most %d bytes is required", maxProvider)
	}
	if within < 0 || within > wantsKept {
		return nil, edgeindex.Invalidf("demand: within %s: want 0 to %s", within, wantsKept)
	}
	now := s.now()
	var rows []connlease.Holding
	if err := s.rdb.SelectContext(ctx, &rows, s.q(`SELECT holder, SUM(taken) AS held, MAX(wants) AS wants FROM (
			SELECT holder, 1 AS taken, 0 AS wants FROM conn_slots WHERE provider = ? AND expires_us > {now}
			UNION ALL
			SELECT holder, 0 AS taken, 1 AS wants FROM conn_wants WHERE provider = ? AND at_us >= {now} - ?
		) d GROUP BY holder ORDER BY holder`), provider, now, provider, now, within.Microseconds()); err != nil {
		return nil, fmt.Errorf("demand: %w", err)
	}
	return rows, nil
}

// budgetSize reads, and locks until tx ends, provider's stored size: 0
// when none is stored.
func (s *Store) budgetSize(ctx context.Context, tx *sqlx.Tx, provider string) (int, error) {
	var size int
	err := tx.GetContext(ctx, &size, s.q("SELECT size FROM conn_budgets WHERE provider = ? {forupdate}"), provider)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("take slot: read the budget's size: %w", err)
	}
	return size, nil
}

// BudgetSizes implements connlease.Store.
func (s *Store) BudgetSizes(ctx context.Context) ([]connlease.BudgetSize, error) {
	var out []connlease.BudgetSize
	if err := s.rdb.SelectContext(ctx, &out, "SELECT provider, size FROM conn_budgets ORDER BY provider"); err != nil {
		return nil, fmt.Errorf("budget sizes: %w", err)
	}
	return out, nil
}

// RenewSlot implements connlease.Store. A lease that ran out is lost, even
// when no other holder took it yet.
func (s *Store) RenewSlot(ctx context.Context, sl connlease.Lease, ttl time.Duration) (connlease.Lease, error) {
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return connlease.Lease{}, err
	}
	now := s.now()
	var r slotRow
	err = s.db.GetContext(ctx, &r, s.q(`UPDATE conn_slots SET expires_us = {now} + ?
		WHERE provider = ? AND n = ? AND token = ? AND expires_us > {now}
		RETURNING provider, n, holder, token, expires_us`), now, ttlUS, sl.Provider, sl.N, sl.Token, now)
	if errors.Is(err, sql.ErrNoRows) {
		return connlease.Lease{}, fmt.Errorf("renew slot %d of %q, token %d: %w", sl.N, sl.Provider, sl.Token, connlease.ErrLost)
	}
	if err != nil {
		return connlease.Lease{}, fmt.Errorf("renew slot: %w", err)
	}
	return r.slot(), nil
}

// ReleaseSlot implements connlease.Store: the lease ends now, if sl.Token
// still holds it.
func (s *Store) ReleaseSlot(ctx context.Context, sl connlease.Lease) error {
	if _, err := s.db.ExecContext(ctx, s.q(`UPDATE conn_slots SET expires_us = 0 WHERE provider = ? AND n = ? AND token = ?`),
		sl.Provider, sl.N, sl.Token); err != nil {
		return fmt.Errorf("release slot: %w", err)
	}
	return nil
}

// Slots implements connlease.Store.
func (s *Store) Slots(ctx context.Context) ([]connlease.Lease, error) {
	var rows []slotRow
	if err := s.rdb.SelectContext(ctx, &rows, s.q(`SELECT provider, n, holder, token, expires_us FROM conn_slots
		WHERE expires_us > {now} ORDER BY provider, n`), s.now()); err != nil {
		return nil, fmt.Errorf("slots: %w", err)
	}
	out := make([]connlease.Lease, len(rows))
	for i, r := range rows {
		out[i] = r.slot()
	}
	return out, nil
}

func checkSlotArgs(provider, holder string) error {
	if holder == "" || len(holder) > maxProvider || len(provider) > maxProvider {
		return edgeindex.Invalidf("slot: a holder of 1 to %d bytes and a provider name of at most %d are required", maxProvider, maxProvider)
	}
	return nil
}
