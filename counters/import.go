package counters

import (
	"context"
	"fmt"
	"iter"
	"time"
)

// An import brings counters from elsewhere (another counter service, or
// this one's export) in as lines, one counter each, read as they arrive:
// however many lines there are, only a chunk of them is held at a time.
// Each line is applied whole or not at all. The lines that cannot be
// applied are refused and named in the report with a reason; the others
// are applied, or, with Atomic, nothing is applied unless every line can be.

// Importer is what a backend does for imports: apply the lines as opts
// say and report what it did (see Service.Import).
type Importer interface {
	Import(ctx context.Context, opts ImportOptions, lines iter.Seq[ImportLine]) (*ImportReport, error)
}

// ImportMode says what an import does with a counter that exists already.
type ImportMode string

// The import modes.
const (
	// ImportCreate creates the counters that do not exist and leaves the
	// others as they are: their lines are skipped and reported.
	ImportCreate ImportMode = "create"
	// ImportOverwrite also replaces an existing counter's value and bounds
	// with the line's; its created_at stays.
	ImportOverwrite ImportMode = "overwrite"
)

// ImportOptions say how an import applies its lines.
type ImportOptions struct {
	Mode   ImportMode
	Atomic bool // all or nothing: one refused line and nothing is applied

	// StepTimeout bounds each chunk's MySQL work (the whole import is
	// bounded by its context); 0: only the context.
	StepTimeout time.Duration

	// Key, when set, makes the import idempotent (see idempotency.go): a
	// repeat gets the first import's report and changes nothing. The
	// caller fingerprints the lines as they are read, so Key.Fingerprint is
	// read only once the lines have run out.
	Key *Idempotency
}

// Validate returns EINVALID for an unknown mode or a bad key.
func (o ImportOptions) Validate() error {
	if o.Mode != ImportCreate && o.Mode != ImportOverwrite {
		return Errorf(EINVALID, "mode must be %q or %q.", ImportCreate, ImportOverwrite)
	}
	if o.Key != nil {
		return o.Key.Validate()
	}
	return nil
}

// ImportLine is one line of an import: the counter it carries, or, when
// Reason is set, why it is refused (the reader could not read it, or a
// check before the store's refused it).
type ImportLine struct {
	Line    int64   // 1-based, as an editor numbers the lines of the input
	Counter Counter // Name, Value, Min, Max; CreatedAt zero means now
	Reason  string  // "" or one of the Reason constants
	Message string  // why, for a person, when Reason is set

	// Err, when set, says the input broke off here (a cut connection, a
	// corrupt gzip stream): the import stops, and the lines read since the
	// last commit are not applied. It is the last line.
	Err error
}

// Refuse returns the line refused for reason.
func (l ImportLine) Refuse(reason, format string, args ...any) ImportLine {
	l.Reason, l.Message = reason, fmt.Sprintf(format, args...)
	return l
}

// The reasons an import gives for a line it did not apply. Every refusal
// has the code of the error the same change would get on its own, so that
// an atomic import that refuses fails with the status of that error.
const (
	ReasonMalformed  = "malformed"         // not a JSON object with the export's fields
	ReasonName       = "invalid_name"      // empty, too long, not UTF-8, control characters
	ReasonBounds     = "invalid_bounds"    // min above max
	ReasonOutOfRange = "out_of_range"      // value outside the line's bounds
	ReasonReserved   = "reserved"          // a name starting with "_"
	ReasonPermission = "permission_denied" // outside the API key's prefixes, or no write scope
	ReasonExists     = "exists"            // skipped: mode create and the counter exists
)

// reasonCode is the error code of each refusal reason.
var reasonCode = map[string]string{
	ReasonMalformed:  EINVALID,
	ReasonName:       EINVALID,
	ReasonBounds:     EINVALID,
	ReasonOutOfRange: EOUTOFRANGE,
	ReasonReserved:   EPERMISSION,
	ReasonPermission: EPERMISSION,
}

// MaxReportedLines is how many skipped and refused lines a report names;
// it counts all of them, and says when it names fewer.
const MaxReportedLines = 1000

// earliest and latest bound created_at: MySQL's DATETIME holds years 1000
// to 9999.
var (
	earliest = time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)
	latest   = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)
)

// CheckImportLine refuses a line whose counter could not be set through
// the API: a bad or reserved name, bounds that contradict themselves or
// the value, a created_at MySQL cannot store. It returns the line as it
// came when it is fine, or already refused.
func CheckImportLine(l ImportLine) ImportLine {
	if l.Reason != "" || l.Err != nil {
		return l
	}
	c := &l.Counter
	if err := ValidateName(c.Name); err != nil {
		return l.Refuse(ReasonName, "%s", ErrorMessage(err))
	}
	if IsReserved(c.Name) {
		return l.Refuse(ReasonReserved, "Names starting with %q are reserved and cannot be imported.", ReservedPrefix)
	}
	if err := c.CheckBounds(); err != nil {
		reason := ReasonOutOfRange
		if ErrorCode(err) == EINVALID {
			reason = ReasonBounds
		}
		return l.Refuse(reason, "%s", ErrorMessage(err))
	}
	if !c.CreatedAt.IsZero() && (c.CreatedAt.Before(earliest) || c.CreatedAt.After(latest)) {
		return l.Refuse(ReasonMalformed, "created_at must lie between the years 1000 and 9999.")
	}
	return l
}

// CheckImportLines is CheckImportLine over every line.
func CheckImportLines(lines iter.Seq[ImportLine]) iter.Seq[ImportLine] {
	return func(yield func(ImportLine) bool) {
		for l := range lines {
			if !yield(CheckImportLine(l)) {
				return
			}
		}
	}
}

// ImportReport says what an import did: how many lines it read, created,
// overwrote, skipped and refused, and which were skipped or refused (the
// first MaxReportedLines of them; Truncated when there were more). With
// Atomic, Applied is false when a refusal (or a failure) left everything
// as it was; Created and Overwritten then count nothing.
type ImportReport struct {
	Mode        ImportMode
	Atomic      bool
	Applied     bool
	Read        int64 // lines read, blank ones left out
	Created     int64
	Overwritten int64
	Skipped     int64
	Refused     int64
	Lines       []ReportedLine
	Truncated   bool
	Replayed    bool // the report of an earlier import with the same key: nothing changed now

	code string // the error code of an atomic import that refused, see Err
}

// ReportedLine is a line an import skipped or refused.
type ReportedLine struct {
	Line    int64
	Name    string // "" when the line had no readable name
	Outcome string // "skipped" or "refused"
	Reason  string
	Message string
}

// NewImportReport starts the report of an import with o.
func NewImportReport(o ImportOptions) *ImportReport {
	return &ImportReport{Mode: o.Mode, Atomic: o.Atomic}
}

// Refuse records a refused line.
func (r *ImportReport) Refuse(l ImportLine) {
	r.Refused++
	if code := reasonCode[l.Reason]; r.code == "" || code == EPERMISSION {
		r.code = code
	}
	r.list(l, "refused", l.Reason, l.Message)
}

// Skip records a line skipped because its counter exists.
func (r *ImportReport) Skip(l ImportLine) {
	r.Skipped++
	r.list(l, "skipped", ReasonExists, "The counter exists; mode create leaves it as it is.")
}

func (r *ImportReport) list(l ImportLine, outcome, reason, message string) {
	if len(r.Lines) == MaxReportedLines {
		r.Truncated = true
		return
	}
	name := l.Counter.Name
	if ValidateName(name) != nil {
		name = "" // a huge or broken name is not echoed back
	}
	r.Lines = append(r.Lines, ReportedLine{Line: l.Line, Name: name, Outcome: outcome, Reason: reason, Message: message})
}

// Merge adds what o counts and lists to r, as if r had recorded it after
// its own lines.
func (r *ImportReport) Merge(o *ImportReport) {
	r.Read += o.Read
	r.Created += o.Created
	r.Overwritten += o.Overwritten
	r.Skipped += o.Skipped
	r.Refused += o.Refused
	room := MaxReportedLines - len(r.Lines)
	r.Truncated = r.Truncated || o.Truncated || len(o.Lines) > room
	r.Lines = append(r.Lines, o.Lines[:min(room, len(o.Lines))]...)
}

// Err is the error of an atomic import that refused a line, nil otherwise:
// the code of the first refusal, and permission_denied when any line was
// outside the caller's rights, as for a batch.
func (r *ImportReport) Err() error {
	if !r.Atomic || r.Refused == 0 {
		return nil
	}
	code := r.code
	if code == "" {
		code = EINVALID
	}
	return Errorf(code, "%d of %d lines were refused (the report names them); the import is atomic, so nothing was imported.", r.Refused, r.Read)
}
