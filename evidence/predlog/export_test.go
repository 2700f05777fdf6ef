package predlog

// WithAfterBatch returns o with f called on the writer goroutine after
// each batch's commit and again after the retention it triggered, when
// nothing else writes: a test reads the files' sizes there.
func WithAfterBatch(o Options, f func()) Options {
	o.afterBatch = f
	return o
}
