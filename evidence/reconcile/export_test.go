package reconcile

// ReadInPartsOf makes r read a report's spectra in parts of at least n
// (two at once, as a report of tens of thousands does), so that a test's
// few thousand spectra take that path.
func ReadInPartsOf(r *Reconciler, n int) { r.minPartIDs = n }
