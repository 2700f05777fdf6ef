package predlog

import (
	"database/sql"
	"time"
)

// Columns are a record's columns as the SQL stores keep them, in the
// order of their queries (ID, prediction id and model version are each
// store's own to read): database/sql's nullable types, which
// both SQLite's and PostgreSQL's drivers scan into. One mapping to a
// Record, here, serves every store.
type Columns struct {
	// Time is Unix nanoseconds; Role the Role's number.
	Time, Role                  int64
	Conc, Conf                  [3]sql.NullFloat64
	T2, Q                       sql.NullFloat64
	Batch, Port                 sql.NullString
	Column, Seq, Channel, Integ sql.NullFloat64
}

// Figures are the destinations of the concentration and confidence
// columns, which every read has after the record's identity (id,
// prediction id, Time, model version, Role).
func (c *Columns) Figures() []any {
	return []any{&c.Conc[0], &c.Conc[1], &c.Conc[2], &c.Conf[0], &c.Conf[1], &c.Conf[2]}
}

// Context are the destinations of the diagnostics and scan context
// columns, which the full reads add after the figures.
func (c *Columns) Context() []any {
	return []any{&c.T2, &c.Q, &c.Batch, &c.Port, &c.Column, &c.Seq, &c.Channel, &c.Integ}
}

// Concentrations are the destinations of the concentration columns
// alone, which ByPredictions reads after a record's id, model version
// and role.
func (c *Columns) Concentrations() []any {
	return []any{&c.Conc[0], &c.Conc[1], &c.Conc[2]}
}

// FillConcentrations sets rec's role and concentrations.
func (c *Columns) FillConcentrations(rec *Record) {
	rec.Role = Role(c.Role)
	for k := range 3 {
		rec.Concentrations.Value[k], rec.Concentrations.Valid[k] = c.Conc[k].Float64, c.Conc[k].Valid
	}
}

// FillFigures sets rec's time, role, concentrations and confidence.
func (c *Columns) FillFigures(rec *Record) {
	rec.Time = time.Unix(0, c.Time).UTC()
	rec.Role = Role(c.Role)
	for k := range 3 {
		rec.Concentrations.Value[k], rec.Concentrations.Valid[k] = c.Conc[k].Float64, c.Conc[k].Valid
		rec.Confidence.Value[k], rec.Confidence.Valid[k] = c.Conf[k].Float64, c.Conf[k].Valid
	}
}

// FillContext sets rec's diagnostics and scan context.
func (c *Columns) FillContext(rec *Record) {
	rec.ReducedT2, rec.HasReducedT2 = c.T2.Float64, c.T2.Valid
	rec.ReducedQ, rec.HasReducedQ = c.Q.Float64, c.Q.Valid
	rec.BatchID, rec.HasBatchID = c.Batch.String, c.Batch.Valid
	rec.Port, rec.HasPort = c.Port.String, c.Port.Valid
	rec.ColumnIndex, rec.HasColumnIndex = c.Column.Float64, c.Column.Valid
	rec.ScanSeq, rec.HasScanSeq = c.Seq.Float64, c.Seq.Valid
	rec.Channel, rec.HasChannel = c.Channel.Float64, c.Channel.Valid
	rec.IntegrationMS, rec.HasIntegrationMS = c.Integ.Float64, c.Integ.Valid
}
