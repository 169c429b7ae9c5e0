package wire_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/wire"
)

func TestBadCoreSettingsFailWithOneLineNamingTheVariable(t *testing.T) {
	tests := []struct {
		env     map[string]string
		wantErr string
	}{
		{map[string]string{}, ""},
		{map[string]string{"COUNTERS_MYSQL_DSN": "not a dsn"}, "COUNTERS_MYSQL_DSN"},
		{map[string]string{"COUNTERS_MYSQL_TIMEOUT": "soon"}, "COUNTERS_MYSQL_TIMEOUT"},
		{map[string]string{"COUNTERS_MYSQL_TIMEOUT": "-1s"}, "COUNTERS_MYSQL_TIMEOUT"},
		{map[string]string{"COUNTERS_MYSQL_MAX_CONNS": "0"}, "COUNTERS_MYSQL_MAX_CONNS"},
		{map[string]string{"COUNTERS_REDIS_URL": "http://x"}, "COUNTERS_REDIS_URL"},
		{map[string]string{"COUNTERS_LOG_LEVEL": "loud"}, "COUNTERS_LOG_LEVEL"},
		{map[string]string{"COUNTERS_LOG_FORMAT": "xml"}, "COUNTERS_LOG_FORMAT"},
		{map[string]string{"COUNTERS_COALESCE": "maybe"}, "COUNTERS_COALESCE"},
		{map[string]string{"COUNTERS_COALESCE_MAX_INFLIGHT": "64", "COUNTERS_MYSQL_MAX_CONNS": "8"}, "COUNTERS_COALESCE_MAX_INFLIGHT"},
		{map[string]string{"COUNTERS_BODY_LIMIT": "10"}, "COUNTERS_BODY_LIMIT"},
		{map[string]string{"COUNTERS_READ_TIMEOUT": "0s"}, "COUNTERS_READ_TIMEOUT"},
		{map[string]string{"COUNTERS_WRITE_TIMEOUT": "-1s"}, "COUNTERS_WRITE_TIMEOUT"},
		{map[string]string{"COUNTERS_IDLE_TIMEOUT": "later"}, "COUNTERS_IDLE_TIMEOUT"},
		{map[string]string{"COUNTERS_SHUTDOWN_DRAIN": "0s"}, ""},
		{map[string]string{"COUNTERS_SHUTDOWN_DRAIN": "-1s"}, "COUNTERS_SHUTDOWN_DRAIN"},
		{map[string]string{"COUNTERS_WEBHOOK_ALERTS_EVERY": "500ms"}, "COUNTERS_WEBHOOK_ALERTS_EVERY"},
		{map[string]string{"COUNTERS_WEBHOOK_ALERTS_EVERY": "2m"}, "COUNTERS_WEBHOOK_ALERTS_EVERY"},
		{map[string]string{"COUNTERS_WEBHOOK_ALERTS_EVERY": "1s"}, ""},
		{map[string]string{"COUNTERS_LIVE_MAX_PER_ADDR": "0"}, "COUNTERS_LIVE_MAX_PER_ADDR"},
		{map[string]string{"COUNTERS_LIVE_MAX_STREAMS": "-1"}, "COUNTERS_LIVE_MAX_STREAMS"},
		{map[string]string{"COUNTERS_LIVE_CHECK_EVERY": "0s"}, "COUNTERS_LIVE_CHECK_EVERY"},
		{map[string]string{"COUNTERS_LIVE_HEARTBEAT": "30s"}, "COUNTERS_LIVE_HEARTBEAT"},
		{map[string]string{"COUNTERS_LIVE_HEARTBEAT": "15s"}, ""},
		{map[string]string{"COUNTERS_LIVE_HEARTBEAT": "soon"}, "COUNTERS_LIVE_HEARTBEAT"},
		{map[string]string{"COUNTERS_HITS_RATE_LIMIT": "many"}, "COUNTERS_HITS_RATE_LIMIT"},
		{map[string]string{"COUNTERS_HISTORY_RETENTION": "400d"}, ""},
		{map[string]string{"COUNTERS_HISTORY_RETENTION": "9600h"}, ""},
		{map[string]string{"COUNTERS_HISTORY_RETENTION": "0"}, ""},
		{map[string]string{"COUNTERS_HISTORY_RETENTION": "12h"}, "COUNTERS_HISTORY_RETENTION"},
		{map[string]string{"COUNTERS_HISTORY_RETENTION": "a year"}, "COUNTERS_HISTORY_RETENTION"},
		{map[string]string{"COUNTERS_HISTORY_RETENTION": "-3d"}, "COUNTERS_HISTORY_RETENTION"},
	}
	for _, tt := range tests {
		for k, v := range tt.env {
			t.Setenv(k, v)
		}
		c, err := wire.Load()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tt.env, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n")):
			t.Errorf("%v: error %v, want one line naming %s", tt.env, err, tt.wantErr)
		case tt.wantErr == "" && (c.HTTP.Addr != ":8080" || c.MySQL.Timeout != 3*time.Second || !c.Coalesce.On):
			t.Errorf("defaults: %+v", c)
		}
		for k := range tt.env {
			t.Setenv(k, "")
		}
	}
}

// A value that does not parse is named by its variable, whichever
// component's struct (or struct within one) holds it: env names only the Go
// field, and Cache.Timeout and MySQL.Timeout share theirs.
func TestAnyVariableThatDoesNotParseIsNamedFirst(t *testing.T) {
	eachVariable(reflect.ValueOf(wire.Defaults()), func(name string, v reflect.Value) {
		if v.Kind() == reflect.String || v.Kind() == reflect.Slice {
			return // any text is a string, and its validation has tests of its own
		}
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, "soon")
			_, err := wire.Load()
			if err == nil || !strings.HasPrefix(err.Error(), name+": ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %v, want one line starting with %s", err, name)
			}
		})
	})
}

func TestValuesThatDoNotParseInTwoComponentsAreBothNamed(t *testing.T) {
	t.Setenv("COUNTERS_MYSQL_TIMEOUT", "soon")
	t.Setenv("COUNTERS_REDIS_TIMEOUT", "later")
	_, err := wire.Load()
	if err == nil {
		t.Fatal("no error")
	}
	parts := strings.Split(err.Error(), "; ")
	if len(parts) != 2 || !strings.HasPrefix(parts[0], "COUNTERS_MYSQL_TIMEOUT: ") || !strings.Contains(parts[0], `"soon"`) ||
		!strings.HasPrefix(parts[1], "COUNTERS_REDIS_TIMEOUT: ") || !strings.Contains(parts[1], `"later"`) {
		t.Errorf("error %v, want each variable named with its value", err)
	}
}

// A variable that was renamed stops the service rather than being ignored:
// its operator would otherwise run on a default without knowing.
func TestARenamedVariableIsRefusedNamingItsNewName(t *testing.T) {
	for old, name := range map[string]string{
		"COUNTERS_LIST_CACHE_TTL":     "COUNTERS_LIST_TTL",
		"COUNTERS_COALESCE_MAX_BATCH": "COUNTERS_COALESCE_MAX_ROUND",
		"COUNTERS_CACHE_TTL":          "COUNTERS_CACHE_LEASE",
	} {
		t.Run(old, func(t *testing.T) {
			t.Setenv(old, "1s")
			_, err := wire.Load()
			if err == nil || !strings.HasPrefix(err.Error(), old+": ") || !strings.Contains(err.Error(), name) {
				t.Errorf("error %v, want one naming %s and %s", err, old, name)
			}
		})
	}
}

// A retention is read in days or as a Go duration; none (the default)
// keeps every day of history.
func TestHistoryRetentionIsReadInDaysOrAsADuration(t *testing.T) {
	if got := wire.Defaults().History.Retention; got != 0 {
		t.Fatalf("default retention %v, want none", time.Duration(got))
	}
	for _, tt := range []struct {
		env  string
		want time.Duration
	}{
		{"400d", 400 * 24 * time.Hour},
		{"1d", 24 * time.Hour},
		{"9600h", 9600 * time.Hour},
		{"0", 0},
		{"106751d", 106751 * 24 * time.Hour},
	} {
		t.Setenv("COUNTERS_HISTORY_RETENTION", tt.env)
		c, err := wire.Load()
		if err != nil {
			t.Fatalf("%s: %v", tt.env, err)
		}
		if got := time.Duration(c.History.Retention); got != tt.want {
			t.Errorf("%s: retention %v, want %v", tt.env, got, tt.want)
		}
	}
}

// A retention of more days than a duration holds is refused, not wrapped
// round into one that deletes nearly all history; so are other
// retentions that are not one.
func TestAHistoryRetentionPastWhatADurationHoldsIsRefused(t *testing.T) {
	for _, tt := range []struct{ env, want string }{
		{"106752d", "at most 106751d"},
		{"213505d", "at most 106751d"},
		{"99999999999999999999d", "want a number of days"},
		{"-1d", "want a number of days"},
		{"12h", "at least a day"},
		{"3000000h", "want a number of days"},
	} {
		t.Setenv("COUNTERS_HISTORY_RETENTION", tt.env)
		if _, err := wire.Load(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one saying %q", tt.env, err, tt.want)
		}
	}
}
