package sqlitedb

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// Statements keeps the prepared statements of a database by their text.
// The driver parses a query each time it is run unprepared; for a query
// run once per row of a lab post, that parse was half the post's CPU.
// The texts are the store's own, so their number is small; past
// maxStatements distinct texts a query runs unprepared rather than grow
// the set. It is safe for concurrent use.
type Statements struct {
	db *sql.DB

	mu     sync.Mutex
	byText map[string]*sql.Stmt
	closed bool
}

// maxStatements bounds the statements kept: more than a store's queries
// (a filtered page has a text per combination of its filters).
const maxStatements = 256

// NewStatements returns the statement set of db. Close it before db.
func NewStatements(db *sql.DB) *Statements {
	return &Statements{db: db, byText: make(map[string]*sql.Stmt)}
}

// QueryContext runs q with args as db.QueryContext does, on q's
// statement, prepared at its first use.
func (s *Statements) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	stmt, err := s.statement(ctx, q)
	if err != nil {
		return nil, err
	}
	if stmt == nil {
		return s.db.QueryContext(ctx, q, args...)
	}
	return stmt.QueryContext(ctx, args...)
}

// statement returns q's statement, preparing it if need be; nil when the
// set is full.
func (s *Statements) statement(ctx context.Context, q string) (*sql.Stmt, error) {
	s.mu.Lock()
	stmt, ok := s.byText[q]
	full := len(s.byText) >= maxStatements
	closed := s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return nil, errors.New("sqlitedb: the statements are closed")
	case ok:
		return stmt, nil
	case full:
		return nil, nil
	}
	// Prepared outside the lock: another query need not wait for it. Two
	// first uses at once prepare twice, and one is closed.
	stmt, err := s.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept, ok := s.byText[q]; ok || s.closed {
		stmt.Close()
		if s.closed {
			return nil, errors.New("sqlitedb: the statements are closed")
		}
		return kept, nil
	}
	s.byText[q] = stmt
	return stmt, nil
}

// Close closes every statement; later queries fail.
func (s *Statements) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	var errs []error
	for q, stmt := range s.byText {
		errs = append(errs, stmt.Close())
		delete(s.byText, q)
	}
	return errors.Join(errs...)
}
