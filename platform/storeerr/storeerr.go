// Package storeerr holds the one error every shared store reports the
// same way: the store (the PostgreSQL database of a fleet) cannot be
// reached now. It is a package of its own so that the stores of every
// domain, and the contract table that maps the error, share it without
// importing one another.
package storeerr

import "errors"

// ErrUnavailable means the shared store did not answer (the connection
// was refused, lost or timed out). Nothing was changed that the caller
// was told of; the same request may succeed once the store is back.
var ErrUnavailable = errors.New("the shared store is unavailable")
