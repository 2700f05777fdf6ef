package registry

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestETagNamesTheState: the tag changes with every change a client can
// see (a stage, a load), is the same while nothing changes and after a
// restart of the same state, and the tagged reads return it with their
// content.
func TestETagNamesTheState(t *testing.T) {
	dir := t.TempDir()
	r := newTestRegistry(t, dir, nil)
	empty := r.ETag()
	if !strings.HasPrefix(empty, `"`) || !strings.HasSuffix(empty, `"`) || len(empty) < 3 {
		t.Fatalf("ETag %q is not a quoted strong tag", empty)
	}
	v1 := addStaged(t, r, 1, time.Unix(1000, 0))
	staged := r.ETag()
	if staged == empty {
		t.Fatal("the ETag did not change when a model was staged")
	}
	if _, _, tag := r.ListTagged(); tag != staged {
		t.Fatalf("ListTagged's tag %s, ETag %s", tag, staged)
	}
	if _, err := r.Load(context.Background(), LoadRequest{Version: v1}); err != nil {
		t.Fatal(err)
	}
	loaded := r.ETag()
	if loaded == staged || loaded != r.ETag() {
		t.Fatalf("the ETag did not change with a load, or changes on its own: %s, %s", staged, loaded)
	}
	if _, tag, err := r.DescribeTagged(v1); err != nil || tag != loaded {
		t.Fatalf("DescribeTagged: %s, %v; want %s", tag, err, loaded)
	}
	if m, tag := r.ActiveTagged(); m == nil || tag != loaded {
		t.Fatalf("ActiveTagged: %v, %s; want %s", m, tag, loaded)
	}
	r = reopen(t, r, nil)
	if got := r.ETag(); got != loaded {
		t.Fatalf("after a restart of the same state the ETag is %s, was %s", got, loaded)
	}
}

// TestLoadPreconditions: a stale If-Match or a wrong expected_active is
// ErrPreconditionFailed naming the active version, and changes nothing;
// current ones, a list of tags holding the current one, and "*" load.
func TestLoadPreconditions(t *testing.T) {
	r := newTestRegistry(t, t.TempDir(), nil)
	ctx := context.Background()
	v1 := addStaged(t, r, 1, time.Unix(1000, 0))
	v2 := addStaged(t, r, 2, time.Unix(2000, 0))
	none := ""
	if _, err := r.Load(ctx, LoadRequest{Version: v1, ExpectedActive: &v2}); !errors.Is(err, ErrPreconditionFailed) || !strings.Contains(err.Error(), "no model is active") {
		t.Fatalf("expected_active %s with none active: %v", v2, err)
	}
	seen := r.ETag()
	if _, err := r.Load(ctx, LoadRequest{Version: v1, IfMatch: seen, ExpectedActive: &none}); err != nil {
		t.Fatalf("load with current preconditions: %v", err)
	}
	before := r.ETag()
	_, err := r.Load(ctx, LoadRequest{Version: v2, IfMatch: seen})
	if !errors.Is(err, ErrPreconditionFailed) || !strings.Contains(err.Error(), v1) {
		t.Fatalf("load with a stale If-Match: %v, want ErrPreconditionFailed naming %s", err, v1)
	}
	if _, err := r.Load(ctx, LoadRequest{Version: v2, ExpectedActive: &v2}); !errors.Is(err, ErrPreconditionFailed) {
		t.Fatalf("load with a wrong expected_active: %v", err)
	}
	if r.ETag() != before || activeValue(t, r) != 1 {
		t.Fatal("a refused load changed the registry")
	}
	if _, err := r.Load(ctx, LoadRequest{Version: v2, IfMatch: `"stale", ` + before}); err != nil {
		t.Fatalf("load with a list holding the current tag: %v", err)
	}
	if _, err := r.Load(ctx, LoadRequest{Version: v1, Source: SourceArchived, IfMatch: "*"}); err != nil {
		t.Fatalf("load with If-Match *: %v", err)
	}
}

// TestConcurrentPreconditionedLoadsOneWins: consoles promoting different
// versions from the same list: one load succeeds, every other is refused
// (precondition, or the load in progress), never two swaps.
func TestConcurrentPreconditionedLoadsOneWins(t *testing.T) {
	r := newTestRegistry(t, t.TempDir(), nil)
	var versions []string
	for i := range 6 {
		versions = append(versions, addStaged(t, r, float64(i+1), time.Unix(int64(1000+i), 0)))
	}
	tag := r.ETag()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		won []string
	)
	for _, v := range versions {
		wg.Go(func() {
			for {
				_, err := r.Load(context.Background(), LoadRequest{Version: v, IfMatch: tag})
				switch {
				case errors.Is(err, ErrLoadInProgress):
					time.Sleep(time.Millisecond)
					continue
				case err == nil:
					mu.Lock()
					won = append(won, v)
					mu.Unlock()
				case !errors.Is(err, ErrPreconditionFailed):
					t.Errorf("load %s: %v", v, err)
				}
				return
			}
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("%d loads from one list succeeded: %v", len(won), won)
	}
}
