package tickets_test

import (
	"strings"
	"testing"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/tickets"
)

func TestNormalizeSlugUpperCasesThenChecksThePattern(t *testing.T) {
	tests := []struct {
		in, want string // want "" means EINVALID
	}{
		{"NINJA", "NINJA"},
		{"ninja", "NINJA"},
		{"Rock2", "ROCK2"},
		{"a", "A"},
		{"ABCDEFGHIJ", "ABCDEFGHIJ"},
		{"abcdefghijk", ""}, // 11 characters
		{"", ""},
		{"1ABC", ""},
		{"NIN-JA", ""},
		{"NIN JA", ""},
		{"NINJA_", ""},
		{"ÄPFEL", ""},
		{"nınja", ""}, // dotless ı upper-cases to I in Unicode, not here
		{"ſoo", ""},   // long s upper-cases to S in Unicode, not here
	}
	for _, tt := range tests {
		got, err := tickets.NormalizeSlug(tt.in)
		if tt.want == "" {
			if code := counters.ErrorCode(err); code != counters.EINVALID {
				t.Errorf("NormalizeSlug(%q) = %q, %v; want invalid_argument", tt.in, got, err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("NormalizeSlug(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestBoardCreateNeedsAPositiveCompanyAndATitle(t *testing.T) {
	tests := []struct {
		name string
		req  tickets.BoardCreate
		ok   bool
	}{
		{"valid", tickets.BoardCreate{CompanyID: 1, Slug: "ninja", Title: "Ninja Board"}, true},
		{"company zero", tickets.BoardCreate{CompanyID: 0, Slug: "NINJA", Title: "t"}, false},
		{"company negative", tickets.BoardCreate{CompanyID: -1, Slug: "NINJA", Title: "t"}, false},
		{"empty title", tickets.BoardCreate{CompanyID: 1, Slug: "NINJA", Title: ""}, false},
		{"blank title", tickets.BoardCreate{CompanyID: 1, Slug: "NINJA", Title: " \t "}, false},
		{"255 characters", tickets.BoardCreate{CompanyID: 1, Slug: "NINJA", Title: strings.Repeat("é", 255)}, true},
		{"256 characters", tickets.BoardCreate{CompanyID: 1, Slug: "NINJA", Title: strings.Repeat("a", 256)}, false},
		{"bad slug", tickets.BoardCreate{CompanyID: 1, Slug: "9", Title: "t"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req
			err := req.Normalize()
			if tt.ok && err != nil {
				t.Fatalf("Normalize: %v", err)
			}
			if !tt.ok && counters.ErrorCode(err) != counters.EINVALID {
				t.Fatalf("Normalize = %v, want invalid_argument", err)
			}
		})
	}
}

func TestTicketCreateCountsCharactersNotBytes(t *testing.T) {
	tests := []struct {
		name        string
		title, desc string
		ok          bool
	}{
		{"short", "Stars miss", "", true},
		{"empty title", "", "", false},
		{"blank title", "   ", "", false},
		{"title of 255 four-byte characters", strings.Repeat("🥷", 255), "", true},
		{"title of 256 characters", strings.Repeat("a", 256), "", false},
		{"description of 3000 four-byte characters", "t", strings.Repeat("🥷", 3000), true},
		{"description of 3001 characters", "t", strings.Repeat("a", 3001), false},
		{"blank description", "t", "   ", true},
		{"title not UTF-8", "\xff", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tickets.TicketCreate{Title: tt.title, Description: tt.desc}
			err := req.Validate()
			if tt.ok && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if !tt.ok && counters.ErrorCode(err) != counters.EINVALID {
				t.Fatalf("Validate = %v, want invalid_argument", err)
			}
		})
	}
}

func TestParseKeyAcceptsAnyCaseAndRefusesMalformedKeys(t *testing.T) {
	tests := []struct {
		key   string
		slug  string // "" means EINVALID
		local int64
	}{
		{"NINJA-7", "NINJA", 7},
		{"ninja-7", "NINJA", 7},
		{"R2-10000", "R2", 10000},
		{"NINJA-9223372036854775807", "NINJA", 9223372036854775807},
		{"NINJA-9223372036854775808", "", 0},
		{"NINJA-0", "", 0},
		{"NINJA-07", "", 0},
		{"NINJA--7", "", 0},
		{"NINJA-+7", "", 0},
		{"NINJA-7-1", "", 0},
		{"NINJA7", "", 0},
		{"NINJA-", "", 0},
		{"-7", "", 0},
		{"7-7", "", 0},
	}
	for _, tt := range tests {
		slug, local, err := tickets.ParseKey(tt.key)
		if tt.slug == "" {
			if counters.ErrorCode(err) != counters.EINVALID {
				t.Errorf("ParseKey(%q) = %q, %d, %v; want invalid_argument", tt.key, slug, local, err)
			}
			continue
		}
		if err != nil || slug != tt.slug || local != tt.local {
			t.Errorf("ParseKey(%q) = %q, %d, %v; want %q, %d", tt.key, slug, local, err, tt.slug, tt.local)
		}
	}
}

func TestListFilterDefaultsAndBounds(t *testing.T) {
	tests := []struct {
		f         tickets.ListFilter
		wantLimit int // 0 means EINVALID
	}{
		{tickets.ListFilter{}, counters.DefaultListLimit},
		{tickets.ListFilter{Limit: 1}, 1},
		{tickets.ListFilter{Limit: 1000, After: 5}, 1000},
		{tickets.ListFilter{Limit: 1001}, 0},
		{tickets.ListFilter{Limit: -1}, 0},
		{tickets.ListFilter{After: -1}, 0},
	}
	for _, tt := range tests {
		f := tt.f
		err := f.Normalize()
		if tt.wantLimit == 0 {
			if counters.ErrorCode(err) != counters.EINVALID {
				t.Errorf("Normalize(%+v) = %v, want invalid_argument", tt.f, err)
			}
			continue
		}
		if err != nil || f.Limit != tt.wantLimit {
			t.Errorf("Normalize(%+v): limit %d, %v; want %d", tt.f, f.Limit, err, tt.wantLimit)
		}
	}
}
