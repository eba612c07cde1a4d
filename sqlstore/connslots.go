package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/edgeindex/edgeindex/connlease"
	"github.com/edgeindex/edgeindex/lease"
)

var _ connlease.Store = (*Store)(nil)

// maxSlots bounds a budget's size: far past any provider's account, and
// the most rows a TakeSlot adds.
const maxSlots = 10000

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

func (r slotRow) slot() connlease.Slot {
	return connlease.Slot{Provider: r.Provider, N: r.N, Holder: r.Holder, Token: r.Token,
		Expires: fromMicros(sql.NullInt64{Int64: r.Expires, Valid: true})}
}

// takeSlotQuery leases the lowest free slot below the size: one statement,
// so the row it picks is free when it takes it. On PostgreSQL the
// subquery locks the row it picks and skips the rows other takers have
// locked (a row another taker took after this statement began is checked
// again, and passed over, when locked); on SQLite the one writer does one
// statement at a time.
const takeSlotQuery = `UPDATE conn_slots SET holder = ?, token = token + 1, expires_us = {now} + ?
	WHERE provider = ? AND n = (SELECT n FROM conn_slots WHERE provider = ? AND n < ? AND expires_us <= {now}
		ORDER BY n LIMIT 1 {skiplocked})
	RETURNING provider, n, holder, token, expires_us`

// addSlotsQuery adds the rows of slots 0 to size−1 that are missing, free.
const addSlotsQuery = `WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n + 1 < ?)
	INSERT INTO conn_slots (provider, n, holder, token, expires_us)
	SELECT ?, n, '', 0, 0 FROM k WHERE true
	ON CONFLICT (provider, n) DO NOTHING`

// TakeSlot implements connlease.Store. The slot taken is the lowest one
// free; its token is one more than the slot's last.
func (s *Store) TakeSlot(ctx context.Context, provider string, size int, holder string, ttl time.Duration) (connlease.Slot, bool, error) {
	if err := checkSlotArgs(provider, holder); err != nil {
		return connlease.Slot{}, false, err
	}
	if size < 1 || size > maxSlots {
		return connlease.Slot{}, false, lease.Invalidf("take slot: size %d: want 1 to %d", size, maxSlots)
	}
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return connlease.Slot{}, false, err
	}
	take := func() (connlease.Slot, bool, error) {
		now := s.now()
		var r slotRow
		err := s.db.GetContext(ctx, &r, s.q(takeSlotQuery), holder, now, ttlUS, provider, provider, size, now)
		if errors.Is(err, sql.ErrNoRows) {
			return connlease.Slot{}, false, nil
		}
		if err != nil {
			return connlease.Slot{}, false, fmt.Errorf("take slot: %w", err)
		}
		return r.slot(), true, nil
	}
	sl, ok, err := take()
	if ok || err != nil {
		return sl, ok, err
	}
	// Every row below size is held, or some are missing: the budget is new
	// or grew. Add those, free, and take again: the rows this or a
	// concurrent taker added are free.
	if _, err := s.db.ExecContext(ctx, s.q(addSlotsQuery), size, provider); err != nil {
		return connlease.Slot{}, false, fmt.Errorf("take slot: add the slots: %w", err)
	}
	return take()
}

// RenewSlot implements connlease.Store. A lease that ran out is lost, even
// when no other holder took it yet.
func (s *Store) RenewSlot(ctx context.Context, sl connlease.Slot, ttl time.Duration) (connlease.Slot, error) {
	ttlUS, err := ttlMicros(ttl)
	if err != nil {
		return connlease.Slot{}, err
	}
	now := s.now()
	var r slotRow
	err = s.db.GetContext(ctx, &r, s.q(`UPDATE conn_slots SET expires_us = {now} + ?
		WHERE provider = ? AND n = ? AND token = ? AND expires_us > {now}
		RETURNING provider, n, holder, token, expires_us`), now, ttlUS, sl.Provider, sl.N, sl.Token, now)
	if errors.Is(err, sql.ErrNoRows) {
		return connlease.Slot{}, fmt.Errorf("renew slot %d of %q, token %d: %w", sl.N, sl.Provider, sl.Token, connlease.ErrLost)
	}
	if err != nil {
		return connlease.Slot{}, fmt.Errorf("renew slot: %w", err)
	}
	return r.slot(), nil
}

// ReleaseSlot implements connlease.Store: the lease ends now, if sl.Token
// still holds it.
func (s *Store) ReleaseSlot(ctx context.Context, sl connlease.Slot) error {
	if _, err := s.db.ExecContext(ctx, s.q(`UPDATE conn_slots SET expires_us = 0 WHERE provider = ? AND n = ? AND token = ?`),
		sl.Provider, sl.N, sl.Token); err != nil {
		return fmt.Errorf("release slot: %w", err)
	}
	return nil
}

// Slots implements connlease.Store.
func (s *Store) Slots(ctx context.Context) ([]connlease.Slot, error) {
	var rows []slotRow
	if err := s.rdb.SelectContext(ctx, &rows, s.q(`SELECT provider, n, holder, token, expires_us FROM conn_slots
		WHERE expires_us > {now} ORDER BY provider, n`), s.now()); err != nil {
		return nil, fmt.Errorf("slots: %w", err)
	}
	out := make([]connlease.Slot, len(rows))
	for i, r := range rows {
		out[i] = r.slot()
	}
	return out, nil
}

func checkSlotArgs(provider, holder string) error {
	if holder == "" || len(holder) > maxProvider || len(provider) > maxProvider {
		return lease.Invalidf("slot: a holder of 1 to %d bytes and a provider name of at most %d are required", maxProvider, maxProvider)
	}
	return nil
}
