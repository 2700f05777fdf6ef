package store

import "errors"

// ErrRegistry: the registry's storage could not be read or written. A
// store wraps the cause with it; server/contract maps it.
var ErrRegistry = errors.New("registry I/O failure")
