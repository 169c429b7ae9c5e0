package app_test

import (
	"sync"
	"testing"
)

// browserTests are the tests that drive the browser beside the rest,
// longest first (on an idle 2-core machine, about 11 s down to 2 s), so
// that the two lanes of TestWithABrowser end together.
var browserTests = []struct {
	name string
	run  func(*testing.T)
}{
	{"DashboardReportsWhereHitsCameFromInABrowser", dashboardReportsWhereHitsCameFromInABrowser},
	{"DashboardGlanceListsEverySiteAndOpensTodaysView", dashboardGlanceListsEverySiteAndOpensTodaysView},
	{"DashboardAsksOnceForAKey", dashboardAsksOnceForAKey},
	{"OwnVisitsAreNotCountedOnceTheBrowserOptsOut", ownVisitsAreNotCountedOnceTheBrowserOptsOut},
	{"DashboardListsCountersAndDrawsTheirHistoryInABrowser", dashboardListsCountersAndDrawsTheirHistoryInABrowser},
	{"DashboardShowsWhatFitsThePrefix", dashboardShowsWhatFitsThePrefix},
	{"DashboardDrawsAnnotationsAndDownloadsCSV", dashboardDrawsAnnotationsAndDownloadsCSV},
	{"BrowserEventSourceReconnectsAndResumes", browserEventSourceReconnectsAndResumes},
	{"SnippetCountsAndShowsTheValueInABrowser", snippetCountsAndShowsTheValueInABrowser},
	{"DashboardUpdatesValuesLive", dashboardUpdatesValuesLive},
	{"TheExamplePagesFirstViewShowsTheCountAndABadgeOfIt", theExamplePagesFirstViewShowsTheCountAndABadgeOfIt},
	{"SnippetSendsTheReferrerAndCampaignInABrowser", snippetSendsTheReferrerAndCampaignInABrowser},
}

// TestWithABrowser runs browserTests as its subtests, as many at once as
// there are browser slots, while it holds one of go test's -parallel
// slots: as parallel tests of their own, each held a slot while it
// waited for a browser slot, and up to four waited so at once (about 22
// of app's 380 slot-seconds, on an idle machine), the rest of the
// package's tests queued behind them. Run one with
// -run 'TestWithABrowser/DashboardAsksOnceForAKey'.
//
// Its file sorts last in the package, so that it is declared last: go
// test starts the parallel tests in its scheduler's order, the first
// declared, then down from the last or from the middle. In seven runs
// of app the last declared started second or about halfway, and the
// lanes (about a third of the parallel phase on an idle machine) ended
// before the rest; the browser tests, declared early, had started last.
func TestWithABrowser(t *testing.T) {
	t.Parallel()
	next := make(chan int, len(browserTests))
	for i := range browserTests {
		next <- i
	}
	close(next)
	var lanes sync.WaitGroup
	for range cap(browserSlots) {
		lanes.Go(func() {
			for i := range next {
				t.Run(browserTests[i].name, browserTests[i].run)
			}
		})
	}
	lanes.Wait()
}
