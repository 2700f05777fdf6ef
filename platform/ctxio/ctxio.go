// Package ctxio stops long reads when their caller is gone.
package ctxio

import (
	"context"
	"io"
)

// Reader returns r that fails with ctx's error once ctx has ended, so a
// long copy (an artifact being hashed, an import being stored) stops with
// its request.
func Reader(ctx context.Context, r io.Reader) io.Reader { return &reader{ctx: ctx, r: r} }

type reader struct {
	ctx context.Context
	r   io.Reader
}

func (c *reader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
