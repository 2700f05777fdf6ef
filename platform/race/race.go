// Package race tells whether the binary was built with the race
// detector. Tests use it to shorten what only proves scale (long streams,
// many rounds): under -race the code runs several times slower, and the
// same assertions hold on a smaller run. The full sizes run without -race
// and in `make bench`.
package race

// Enabled is true in a binary built with -race (see on.go and off.go).
const Enabled = enabled
