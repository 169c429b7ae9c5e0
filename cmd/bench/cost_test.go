package main

import (
	"os"
	"testing"
)

func TestCostIsPerRequestAndEachFigureItsOwnMedian(t *testing.T) {
	sample := func(service, mysql, redis, wakeups, statements float64) costSample {
		return costSample{cpu: [3]float64{service, mysql, redis}, series: []float64{wakeups, statements}}
	}
	zero := sample(10, 20, -1, 1000, 50)
	tests := []struct {
		name  string
		load  load
		after costSample
		want  costRow
	}{
		{"a second at 1,000/s", load{RPS: 1000, Requests: 1000}, sample(10.05, 20.01, -1, 1250, 60),
			costRow{service: 50, mysql: 10, redis: -1, cores: 0.05, wakeups: 2, statements: 0.01}},
		{"two seconds at 500/s", load{RPS: 500, Requests: 1000}, sample(10.1, 20.03, -1, 1125, 55),
			costRow{service: 100, mysql: 30, redis: -1, cores: 0.05, wakeups: 1, statements: 0.005}},
		{"a faster run", load{RPS: 2000, Requests: 2000}, sample(10.02, 20.1, -1, 2000, 70),
			costRow{service: 10, mysql: 50, redis: -1, cores: 0.02, wakeups: 4, statements: 0.01}},
	}
	var rows []costRow
	for _, tc := range tests {
		got := perRequest(tc.name, tc.load, zero, tc.after)
		tc.want.name, tc.want.load = tc.name, tc.load
		if !near(got, tc.want) {
			t.Errorf("%s: perRequest = %+v, want %+v", tc.name, got, tc.want)
		}
		rows = append(rows, got)
	}
	m := medianCost(rows)
	want := costRow{name: tests[0].name, load: tests[0].load, service: 50, mysql: 30, redis: -1, cores: 0.05, wakeups: 2, statements: 0.01}
	if !near(m, want) {
		t.Errorf("medianCost = %+v, want each figure's own median %+v", m, want)
	}
}

func near(a, b costRow) bool {
	close := func(x, y float64) bool { return x-y < 1e-6 && y-x < 1e-6 }
	return a.name == b.name && a.load == b.load && close(a.service, b.service) && close(a.mysql, b.mysql) &&
		close(a.redis, b.redis) && close(a.cores, b.cores) && close(a.wakeups, b.wakeups) && close(a.statements, b.statements)
}

func TestCPUSecondsReadsThisProcess(t *testing.T) {
	before, err := cpuSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 300_000_000 {
		x += i
	}
	after, err := cpuSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after <= before || x == 0 {
		t.Fatalf("cpuSeconds went from %v to %v over a busy loop", before, after)
	}
}
