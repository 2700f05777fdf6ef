// Package reconcile compares logged predictions with the lab's HPLC
// results: it parses the lab's records (JSON or CSV), matches each to a
// logged spectrum of the same batch, keeps the results in a LabStore, and
// computes per-analyte performance statistics (n, RMSEP, bias, slope and
// intercept of lab against predicted) for every model version that
// predicted on the matched spectra, with a per-batch bias series for a
// control chart.
//
// The package is domain logic only: no HTTP, no SQL. It reads the
// prediction log through predlog.Reader (whose record type it uses) and
// keeps lab results behind LabStore; MemoryStore is an in-memory LabStore.
//
// The request path for a lab post is
//
//	ParseJSON or ParseCSV -> Reconciler.Post (match, then LabStore.Upsert)
//
// and for a performance query
//
//	Reconciler.Performance (LabStore.Range, predlog.Reader.ByPredictions, Statistics)
package reconcile
