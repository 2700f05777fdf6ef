package pgtest_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"ramanserve/platform/pgtest"
)

func TestClusterKillAndStart(t *testing.T) {
	c := pgtest.NewCluster(t)
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.URL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		return conn.Ping(ctx)
	}
	if err := ping(); err != nil {
		t.Fatal(err)
	}
	c.Kill(t)
	if err := ping(); err == nil {
		t.Fatal("the killed cluster answers")
	}
	c.Start(t)
	if err := ping(); err != nil {
		t.Fatal(err)
	}
}
