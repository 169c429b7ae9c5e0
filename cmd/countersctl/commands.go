package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/countersvc/countersvc/client"
)

var commands = []command{
	{words: "inc", args: "NAME [BY]", minArgs: 1, maxArgs: 2, about: "add BY (default 1, may be negative) and print the new value",
		flags: func(fs *pflag.FlagSet) {
			fs.StringArray("label", nil, "KEY=VALUE: a label the step carries (repeat for more, at most 8)")
			keyFlag(fs)
		}, run: inc},
	{words: "get", args: "NAME", minArgs: 1, maxArgs: 1, about: "print the value", run: get},
	{words: "ready", about: "exit 0 when the service is ready to serve (GET /readyz), 1 when not: a health check", run: ready},
	{words: "set", args: "NAME VALUE", minArgs: 2, maxArgs: 2, about: "set the value; --min/--max N set a bound, none removes it",
		flags: func(fs *pflag.FlagSet) {
			fs.String("min", "", "the lowest value allowed (none: unbounded)")
			fs.String("max", "", "the highest value allowed (none: unbounded)")
			fs.Bool("create-only", false, "fail with conflict when the counter exists")
			keyFlag(fs)
		}, run: set},
	{words: "rm", args: "NAME", minArgs: 1, maxArgs: 1, about: "delete the counter and its history", run: rm},
	{words: "ls", args: "[PREFIX]", maxArgs: 1, about: "print NAME<TAB>VALUE for every counter (every page)", run: ls},
	{words: "reset", args: "PREFIX [VALUE]", minArgs: 1, maxArgs: 2, about: "set every counter under PREFIX to VALUE (default 0); print how many", run: reset},
	{words: "history", args: "NAME", minArgs: 1, maxArgs: 1, about: "print START<TAB>COUNT per period",
		flags: func(fs *pflag.FlagSet) {
			fs.String("step", "", "hour, day (default) or month")
			fs.String("from", "", "the first period: RFC 3339, YYYY-MM-DD or YYYY-MM")
			fs.String("to", "", "the end of the range (not included)")
			fs.String("tz", "", "the IANA zone where days and months start (default UTC)")
			fs.Bool("prefix", false, "NAME is a prefix: sum every counter under it")
			fs.Bool("csv", false, "print the service's CSV instead: name,start,end,count")
		}, run: history},
	{words: "breakdown", args: "NAME", minArgs: 1, maxArgs: 1, about: "print VALUE<TAB>COUNT per value of --by, largest first, then (more)<TAB>COUNT for the rest",
		flags: func(fs *pflag.FlagSet) {
			fs.String("by", "", "the label to split by, or name (with --prefix: by counter) (required)")
			fs.String("from", "", "the first day: RFC 3339, YYYY-MM-DD or YYYY-MM")
			fs.String("to", "", "the end of the range (not included)")
			fs.String("tz", "", "the IANA zone of --from and --to (default UTC)")
			fs.Int("limit", 0, "the most rows (default 20)")
			fs.Bool("prefix", false, "NAME is a prefix: every counter under it")
		}, run: breakdown},
	{words: "watch", args: "NAME", minArgs: 1, maxArgs: 1, about: "print the value, then a line per new value, until interrupted", run: watch, unbounded: true},
	{words: "export", args: "[PREFIX]", maxArgs: 1, about: "print every counter under PREFIX as JSON lines",
		flags: func(fs *pflag.FlagSet) {
			fs.Bool("csv", false, "print CSV instead: name,value,created_at,updated_at")
		}, run: export},
	{words: "annotate", args: "NAME TEXT", minArgs: 2, maxArgs: 2, about: "annotate the counter (or, with --prefix, every counter under NAME) and print the annotation's id",
		flags: func(fs *pflag.FlagSet) {
			fs.String("at", "", "the moment it annotates, RFC 3339 (default now)")
			fs.Bool("prefix", false, "NAME is a prefix")
		}, run: annotate},
	{words: "annotations", args: "NAME", minArgs: 1, maxArgs: 1, about: "print ID<TAB>AT<TAB>NAME or PREFIX*<TAB>TEXT per annotation the counter (or prefix) sees, by AT",
		flags: func(fs *pflag.FlagSet) {
			fs.String("from", "", "the earliest moment: RFC 3339, YYYY-MM-DD or YYYY-MM")
			fs.String("to", "", "the end of the range (not included)")
			fs.String("tz", "", "the IANA zone of --from and --to (default UTC)")
			fs.Bool("prefix", false, "NAME is a prefix")
		}, run: annotationsList},
	{words: "unannotate", args: "ID", minArgs: 1, maxArgs: 1, about: "delete the annotation", run: unannotate},
	{words: "import", args: "FILE", minArgs: 1, maxArgs: 1, about: "import JSON lines (FILE, or - for stdin; .gz is gunzipped by the service); print the report",
		flags: func(fs *pflag.FlagSet) {
			fs.String("mode", "create", "create (skip existing counters) or overwrite")
			fs.Bool("atomic", false, "all lines or none")
			keyFlag(fs)
		}, run: importLines},
	{words: "keys create", about: "make an API key and print its secret (shown only once)",
		flags: func(fs *pflag.FlagSet) {
			fs.String("name", "", "what the key is for (required)")
			fs.String("scopes", "", "read,write,admin (required)")
			fs.String("prefixes", "", "the counter names it may touch, by prefix, comma-separated")
			fs.String("companies", "", "the company ids whose boards it may use, comma-separated")
			fs.String("expires", "", "when it stops working (RFC 3339)")
		}, run: keysCreate},
	{words: "keys ls", about: "print ID<TAB>NAME<TAB>SCOPES<TAB>PREFIXES per key", run: keysList},
	{words: "keys rm", args: "ID", minArgs: 1, maxArgs: 1, about: "revoke the key", run: keysRemove},
	{words: "boards create", args: "SLUG TITLE", minArgs: 2, maxArgs: 2, about: "make a board of --company and print ID<TAB>SLUG",
		flags: func(fs *pflag.FlagSet) { fs.Int64("company", 0, "the company's id (required)") }, run: boardsCreate},
	{words: "boards get", args: "ID", minArgs: 1, maxArgs: 1, about: "print ID<TAB>SLUG<TAB>TITLE", run: boardsGet},
	{words: "tickets create", args: "BOARD TITLE", minArgs: 2, maxArgs: 2, about: "number a new ticket of board id BOARD and print its key",
		flags: func(fs *pflag.FlagSet) { fs.String("description", "", "the ticket's description") }, run: ticketsCreate},
	{words: "tickets ls", args: "BOARD", minArgs: 1, maxArgs: 1, about: "print KEY<TAB>TITLE for every ticket of the board", run: ticketsList},
	{words: "tickets get", args: "BOARD NUMBER | KEY", minArgs: 1, maxArgs: 2, about: "print KEY<TAB>TITLE of a ticket, by its board and number, or by --company and its key (NINJA-7)",
		flags: func(fs *pflag.FlagSet) {
			fs.Int64("company", 0, "find the ticket by its key (NINJA-7) in this company")
		}, run: ticketsGet},
	{words: "tickets rm", args: "BOARD NUMBER", minArgs: 2, maxArgs: 2, about: "delete the ticket (its number stays used)", run: ticketsRemove},
	{words: "webhooks create", about: "make a webhook and print its secret (shown only once)",
		flags: func(fs *pflag.FlagSet) {
			fs.String("endpoint", "", "the URL to call (--url is the service's)")
			fs.String("name", "", "the counter to watch, or")
			fs.String("prefix", "", "every counter under a prefix")
			fs.String("thresholds", "", "values whose crossing calls the URL, comma-separated")
			fs.Int64("every", 0, "call at every multiple of N")
			fs.String("direction", "", "up (default), down or both")
		}, run: webhooksCreate},
	{words: "webhooks ls", about: "print ID<TAB>NAME or PREFIX<TAB>URL<TAB>enabled|disabled per webhook", run: webhooksList},
	{words: "webhooks get", args: "ID", minArgs: 1, maxArgs: 1, about: "print ID<TAB>NAME or PREFIX<TAB>URL<TAB>enabled|disabled", run: webhooksGet},
	{words: "webhooks rm", args: "ID", minArgs: 1, maxArgs: 1, about: "delete the webhook", run: webhooksRemove},
	{words: "webhooks deliveries", args: "ID", minArgs: 1, maxArgs: 1, about: "print ID<TAB>STATUS<TAB>ATTEMPTS per delivery, newest first",
		flags: func(fs *pflag.FlagSet) { fs.Int("limit", 0, "how many") }, run: webhooksDeliveries},
	{words: "webhooks enable", args: "ID", minArgs: 1, maxArgs: 1, about: "make a disabled webhook deliver again", run: webhooksEnable},
	{words: "webhooks rotate", args: "ID", minArgs: 1, maxArgs: 1,
		about: "give the webhook a new secret and print it (shown only once); the old one signs too for a day", run: webhooksRotate},
}

// keyFlag lets a script that retries a write itself (after a timeout, or
// a restart) name the write, so that the service applies it once.
func keyFlag(fs *pflag.FlagSet) {
	fs.String("idempotency-key", "", "send this Idempotency-Key: the same key within 24 hours applies the write once")
}

// keyed is the --idempotency-key as the call's option, if one was given.
func (e *env) keyed() []client.CallOption {
	if k := e.str("idempotency-key"); k != "" {
		return []client.CallOption{client.IdempotencyKey(k)}
	}
	return nil
}

func inc(e *env) error {
	by := int64(1)
	if len(e.args) > 1 {
		var err error
		if by, err = e.int64Arg(1, "BY"); err != nil {
			return err
		}
	}
	call := e.keyed()
	labels, err := e.labels()
	if err != nil {
		return err
	}
	if labels != nil {
		call = append(call, client.Labels(labels))
	}
	v, err := e.c.Increment(e.ctx, e.args[0], by, call...)
	if err == nil {
		e.print("%d", v)
	}
	return err
}

// labels reads the --label KEY=VALUE flags; nil when none.
func (e *env) labels() (map[string]string, error) {
	list, _ := e.fs.GetStringArray("label")
	if len(list) == 0 {
		return nil, nil
	}
	labels := map[string]string{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--label must be KEY=VALUE, not %q", kv)
		}
		labels[k] = v
	}
	return labels, nil
}

func get(e *env) error {
	ctr, err := e.c.Get(e.ctx, e.args[0])
	if err == nil {
		e.print("%d", ctr.Value)
	}
	return err
}

func ready(e *env) error { return e.c.Ready(e.ctx) }

func set(e *env) error {
	v, err := e.int64Arg(1, "VALUE")
	if err != nil {
		return err
	}
	opts := client.SetOptions{CreateOnly: e.str("create-only") == "true"}
	for _, b := range []struct {
		flag string
		to   *client.Bound
	}{{"min", &opts.Min}, {"max", &opts.Max}} {
		switch s := e.str(b.flag); s {
		case "":
		case "none":
			*b.to = client.NoLimit
		default:
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return usagef("--%s must be an integer or none, not %q", b.flag, s)
			}
			*b.to = client.Limit(n)
		}
	}
	ctr, _, err := e.c.Set(e.ctx, e.args[0], v, opts, e.keyed()...)
	if err == nil {
		e.print("%d", ctr.Value)
	}
	return err
}

func rm(e *env) error { return e.c.Delete(e.ctx, e.args[0]) }

func ls(e *env) error {
	var prefix string
	if len(e.args) > 0 {
		prefix = e.args[0]
	}
	for ctr, err := range e.c.List(e.ctx, client.ListOptions{Prefix: prefix, PageSize: 1000}) {
		if err != nil {
			return err
		}
		e.print("%s\t%d", ctr.Name, ctr.Value)
	}
	return nil
}

func reset(e *env) error {
	var v int64
	if len(e.args) > 1 {
		var err error
		if v, err = e.int64Arg(1, "VALUE"); err != nil {
			return err
		}
	}
	n, err := e.c.Reset(e.ctx, e.args[0], v)
	if err == nil {
		e.print("%d", n)
	}
	return err
}

func history(e *env) error {
	opts := client.HistoryOptions{Step: client.HistoryStep(e.str("step")), TZ: e.str("tz")}
	var err error
	if opts.From, opts.To, err = e.timeRange(opts.TZ); err != nil {
		return err
	}
	if e.str("csv") == "true" {
		return e.csv(func(w io.Writer) error {
			if e.str("prefix") == "true" {
				return e.c.PrefixHistoryCSV(e.ctx, e.args[0], opts, w)
			}
			return e.c.HistoryCSV(e.ctx, e.args[0], opts, w)
		})
	}
	var h client.History
	if e.str("prefix") == "true" {
		h, err = e.c.PrefixHistory(e.ctx, e.args[0], opts)
	} else {
		h, err = e.c.History(e.ctx, e.args[0], opts)
	}
	if err != nil {
		return err
	}
	for _, p := range h.Points {
		e.print("%s\t%d", p.Start.Format(time.RFC3339), p.Count)
	}
	return nil
}

func breakdown(e *env) error {
	by := e.str("by")
	if by == "" {
		return usagef("--by is required: a label, or name")
	}
	limit, _ := e.fs.GetInt("limit")
	opts := client.BreakdownOptions{TZ: e.str("tz"), Limit: limit}
	var err error
	if opts.From, opts.To, err = e.timeRange(opts.TZ); err != nil {
		return err
	}
	read := e.c.Breakdown
	if e.str("prefix") == "true" {
		read = e.c.PrefixBreakdown
	}
	b, err := read(e.ctx, e.args[0], by, opts)
	if err != nil {
		return err
	}
	for _, r := range b.Rows {
		e.print("%s\t%d", r.Value, r.Count)
	}
	if b.More != 0 {
		e.print("(more)\t%d", b.More)
	}
	return nil
}

// timeRange reads --from and --to (see historyTime).
func (e *env) timeRange(tz string) (from, to time.Time, err error) {
	if from, err = historyTime(e.str("from"), tz, "--from"); err != nil {
		return from, to, err
	}
	to, err = historyTime(e.str("to"), tz, "--to")
	return from, to, err
}

// historyTime reads --from or --to as the service reads from and to: an
// RFC 3339 time, or YYYY-MM-DD or YYYY-MM, local midnight in the zone tz
// (UTC when empty). "" is the zero time: the service's default.
func historyTime(v, tz, flag string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	loc := time.UTC
	if tz != "" {
		var err error
		if loc, err = time.LoadLocation(tz); err != nil {
			return time.Time{}, usagef("--tz must be an IANA time zone, not %q", tz)
		}
	}
	for _, layout := range []string{time.DateOnly, "2006-01"} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, usagef("%s must be an RFC 3339 time, YYYY-MM-DD or YYYY-MM, not %q", flag, v)
}

func watch(e *env) error {
	for ev, err := range e.c.Watch(e.ctx, e.args[0]) {
		if errors.Is(err, e.ctx.Err()) && err != nil {
			return nil // interrupted, or --timeout: the watch is over
		}
		if err != nil {
			return err
		}
		switch {
		case e.json:
			fmt.Fprintf(e.out, "%s\n", ev.Data)
		case ev.Type == "deleted":
			fmt.Fprintln(e.out, "deleted")
		default:
			fmt.Fprintln(e.out, ev.Value)
		}
	}
	return nil
}

func export(e *env) error {
	var prefix string
	if len(e.args) > 0 {
		prefix = e.args[0]
	}
	return e.csv(func(w io.Writer) error {
		var err error
		if e.str("csv") == "true" {
			_, err = e.c.ExportCSV(e.ctx, prefix, w)
		} else {
			_, err = e.c.Export(e.ctx, prefix, w)
		}
		return err
	})
}

// csv runs write on a buffer of the output, flushed whatever happens.
func (e *env) csv(write func(w io.Writer) error) error {
	w := bufio.NewWriter(e.out)
	err := write(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	return err
}

func annotate(e *env) error {
	req := client.AnnotationRequest{Name: e.args[0], Text: e.args[1]}
	if e.str("prefix") == "true" {
		req.Name, req.Prefix = "", e.args[0]
	}
	if at := e.str("at"); at != "" {
		var err error
		if req.At, err = time.Parse(time.RFC3339Nano, at); err != nil {
			return usagef("--at must be an RFC 3339 time, not %q", at)
		}
	}
	a, err := e.c.CreateAnnotation(e.ctx, req)
	if err == nil {
		e.print("%d", a.ID)
	}
	return err
}

func annotationsList(e *env) error {
	var r client.AnnotationRange
	var err error
	if r.From, r.To, err = e.timeRange(e.str("tz")); err != nil {
		return err
	}
	list := e.c.Annotations
	if e.str("prefix") == "true" {
		list = e.c.PrefixAnnotations
	}
	as, err := list(e.ctx, e.args[0], r)
	for _, a := range as {
		target := a.Name
		if target == "" {
			target = a.Prefix + "*"
		}
		e.print("%d\t%s\t%s\t%s", a.ID, a.At.Format(time.RFC3339), target, a.Text)
	}
	return err
}

func unannotate(e *env) error {
	id, err := strconv.ParseInt(e.args[0], 10, 64)
	if err != nil || id < 1 {
		return usagef("ID must be a positive integer, not %q", e.args[0])
	}
	return e.c.DeleteAnnotation(e.ctx, id)
}

func importLines(e *env) error {
	opts := client.ImportOptions{Atomic: e.str("atomic") == "true"}
	switch m := e.str("mode"); m {
	case "create":
	case "overwrite":
		opts.Overwrite = true
	default:
		return usagef("--mode must be create or overwrite, not %q", m)
	}
	var r io.Reader = e.stdin
	if name := e.args[0]; name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		r = f
		opts.Gzip = isGzip(f)
	}
	rep, err := e.c.Import(e.ctx, r, opts, e.keyed()...)
	if err != nil {
		var ae *client.Error
		if errors.As(err, &ae) && ae.Report != nil && !e.json {
			printReport(e, *ae.Report)
		}
		return err
	}
	printReport(e, rep)
	return nil
}

// isGzip peeks at a file's magic number and rewinds it.
func isGzip(f *os.File) bool {
	var magic [2]byte
	n, _ := io.ReadFull(f, magic[:])
	f.Seek(0, io.SeekStart)
	return n == 2 && magic == [2]byte{0x1f, 0x8b}
}

func printReport(e *env, r client.ImportReport) {
	e.print("read %d, created %d, overwritten %d, skipped %d, refused %d", r.Read, r.Created, r.Overwritten, r.Skipped, r.Refused)
	for _, l := range r.Lines {
		e.print("%d\t%s\t%s\t%s\t%s", l.Line, l.Name, l.Outcome, l.Reason, l.Message)
	}
	if r.Truncated {
		e.print("(more lines were skipped or refused than the report lists)")
	}
}

func keysCreate(e *env) error {
	req := client.KeyRequest{Name: e.str("name"), Scopes: splitList(e.str("scopes")), Prefixes: splitList(e.str("prefixes"))}
	if req.Name == "" || len(req.Scopes) == 0 {
		return usagef("keys create needs --name and --scopes")
	}
	if e.isSet("prefixes") && req.Prefixes == nil {
		req.Prefixes = []string{""} // --prefixes "": every non-reserved name
	}
	var err error
	if req.Companies, err = int64List(e.str("companies"), "--companies"); err != nil {
		return err
	}
	if s := e.str("expires"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return usagef("--expires must be an RFC 3339 time, not %q", s)
		}
		req.ExpiresAt = &t
	}
	k, err := e.c.CreateKey(e.ctx, req)
	if err == nil {
		e.print("%s", k.Secret)
	}
	return err
}

func keysList(e *env) error {
	keys, err := e.c.Keys(e.ctx)
	for _, k := range keys {
		e.print("%d\t%s\t%s\t%s", k.ID, k.Name, strings.Join(k.Scopes, ","), prefixColumn(k.Prefixes))
	}
	return err
}

// prefixColumn writes the prefix "" (every name) as "", as keys create
// takes it: left empty, a key that may touch every name would read like
// one that may touch none (a key for boards and tickets only).
func prefixColumn(prefixes []string) string {
	shown := make([]string, len(prefixes))
	for i, p := range prefixes {
		if shown[i] = p; p == "" {
			shown[i] = `""`
		}
	}
	return strings.Join(shown, ",")
}

func keysRemove(e *env) error {
	id, err := e.int64Arg(0, "ID")
	if err != nil {
		return err
	}
	return e.c.DeleteKey(e.ctx, id)
}

func boardsCreate(e *env) error {
	company, _ := strconv.ParseInt(e.str("company"), 10, 64)
	if company <= 0 {
		return usagef("boards create needs --company ID")
	}
	b, err := e.c.CreateBoard(e.ctx, company, e.args[0], e.args[1])
	if err == nil {
		e.print("%d\t%s", b.ID, b.Slug)
	}
	return err
}

func boardsGet(e *env) error {
	id, err := e.int64Arg(0, "ID")
	if err != nil {
		return err
	}
	b, err := e.c.Board(e.ctx, id)
	if err == nil {
		e.print("%d\t%s\t%s", b.ID, b.Slug, b.Title)
	}
	return err
}

func ticketsCreate(e *env) error {
	board, err := e.int64Arg(0, "BOARD")
	if err != nil {
		return err
	}
	t, err := e.c.CreateTicket(e.ctx, board, e.args[1], e.str("description"))
	if err == nil {
		e.print("%s", t.Key)
	}
	return err
}

func ticketsList(e *env) error {
	board, err := e.int64Arg(0, "BOARD")
	if err != nil {
		return err
	}
	for t, err := range e.c.Tickets(e.ctx, board) {
		if err != nil {
			return err
		}
		e.print("%s\t%s", t.Key, t.Title)
	}
	return nil
}

func ticketsGet(e *env) error {
	t, err := findTicket(e)
	if err == nil {
		e.print("%s\t%s", t.Key, t.Title)
	}
	return err
}

func findTicket(e *env) (client.Ticket, error) {
	if company, _ := strconv.ParseInt(e.str("company"), 10, 64); company > 0 {
		if len(e.args) != 1 {
			return client.Ticket{}, usagef("tickets get --company ID takes one KEY, such as NINJA-7")
		}
		return e.c.TicketByKey(e.ctx, company, e.args[0])
	}
	if len(e.args) != 2 {
		return client.Ticket{}, usagef("tickets get takes BOARD NUMBER, or --company ID KEY")
	}
	board, err := e.int64Arg(0, "BOARD")
	if err != nil {
		return client.Ticket{}, err
	}
	n, err := e.int64Arg(1, "NUMBER")
	if err != nil {
		return client.Ticket{}, err
	}
	return e.c.Ticket(e.ctx, board, n)
}

func ticketsRemove(e *env) error {
	board, err := e.int64Arg(0, "BOARD")
	if err != nil {
		return err
	}
	n, err := e.int64Arg(1, "NUMBER")
	if err != nil {
		return err
	}
	return e.c.DeleteTicket(e.ctx, board, n)
}

func webhooksCreate(e *env) error {
	req := client.WebhookRequest{URL: e.str("endpoint"), Name: e.str("name"), Prefix: e.str("prefix"), Direction: e.str("direction")}
	if req.URL == "" || (req.Name == "") == (req.Prefix == "") {
		return usagef("webhooks create needs --endpoint and one of --name and --prefix")
	}
	var err error
	if req.Thresholds, err = int64List(e.str("thresholds"), "--thresholds"); err != nil {
		return err
	}
	req.Every, _ = strconv.ParseInt(e.str("every"), 10, 64)
	w, err := e.c.CreateWebhook(e.ctx, req)
	if err == nil {
		e.print("%s", w.Secret)
	}
	return err
}

func webhooksList(e *env) error {
	hooks, err := e.c.Webhooks(e.ctx)
	for _, w := range hooks {
		printWebhook(e, w)
	}
	return err
}

func webhooksGet(e *env) error {
	w, err := e.c.Webhook(e.ctx, client.ID(e.args[0]))
	if err == nil {
		printWebhook(e, w)
	}
	return err
}

// printWebhook prints ID<TAB>NAME or PREFIX*<TAB>URL<TAB>enabled|disabled.
func printWebhook(e *env, w client.Webhook) {
	target, state := w.Name, "enabled"
	if target == "" {
		target = w.Prefix + "*"
	}
	if w.DisabledAt != nil {
		state = "disabled"
	}
	e.print("%s\t%s\t%s\t%s", w.ID, target, w.URL, state)
}

func webhooksRemove(e *env) error { return e.c.DeleteWebhook(e.ctx, client.ID(e.args[0])) }

func webhooksDeliveries(e *env) error {
	limit, _ := strconv.Atoi(e.str("limit"))
	ds, err := e.c.Deliveries(e.ctx, client.ID(e.args[0]), limit)
	for _, d := range ds {
		e.print("%s\t%s\t%d", d.ID, d.Status, d.Attempts)
	}
	return err
}

func webhooksEnable(e *env) error { return e.c.EnableWebhook(e.ctx, client.ID(e.args[0])) }

func webhooksRotate(e *env) error {
	w, err := e.c.RotateWebhookSecret(e.ctx, client.ID(e.args[0]))
	if err == nil {
		e.print("%s", w.Secret)
	}
	return err
}
