package pgstore

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// unlockTimeout bounds the release of the fleet lock.
const unlockTimeout = 5 * time.Second

// WatchOptions configure Watch.
type WatchOptions struct {
	// Every is the fallback: changed is also called this often, so a
	// notification lost with a connection delays a replica by at most
	// Every (default 2 s).
	Every time.Duration
	// Retry is the pause before listening again after the connection is
	// lost (default 500 ms).
	Retry  time.Duration
	Logger *slog.Logger
}

// Watch calls changed whenever the registry's index may have changed: on
// every notification of a commit, after (re)connecting (a commit may have
// been missed while the connection was down), and every o.Every. It
// holds one of pool's connections while listening, and returns when ctx
// ends. changed runs on Watch's goroutine; notifications arriving while
// it runs are folded into one call after it.
func Watch(ctx context.Context, pool *pgxpool.Pool, o WatchOptions, changed func(context.Context)) {
	if o.Every <= 0 {
		o.Every = 2 * time.Second
	}
	if o.Retry <= 0 {
		o.Retry = 500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	heard := make(chan struct{}, 1)
	go listen(ctx, pool, o, heard)
	tick := time.NewTicker(o.Every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-heard:
		case <-tick.C:
		}
		changed(ctx)
	}
}

// listen keeps a LISTEN connection open, signalling heard (without
// blocking) for each notification and after each (re)connection.
func listen(ctx context.Context, pool *pgxpool.Pool, o WatchOptions, heard chan<- struct{}) {
	signal := func() {
		select {
		case heard <- struct{}{}:
		default:
		}
	}
	for ctx.Err() == nil {
		err := listenOnce(ctx, pool, signal)
		if ctx.Err() != nil {
			return
		}
		o.Logger.Warn("registry change notifications lost; listening again", "err", err, "retry", o.Retry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(o.Retry):
		}
	}
}

func listenOnce(ctx context.Context, pool *pgxpool.Pool, signal func()) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// A listening connection is never handed back to the pool in that
	// state: it is closed (Hijack) when listening ends.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	if _, err := pc.Exec(ctx, `LISTEN `+NotifyChannel); err != nil {
		return err
	}
	signal()
	for {
		if _, err := pc.WaitForNotification(ctx); err != nil {
			return err
		}
		signal()
	}
}
