//go:build linux

package etcd

import (
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The drill's rows (TestDrill's subtests). Those of rpcload read its
// SUMMARY and its cluster client's log; those of the role client read its
// records of each call.

// balance: rpcload's shares over the three lifenet serve (weights 1, 2,
// 3): round-robin, weighted, and p2c without and with a CPU hog beside
// s3.
func (d *drill) balance(t *testing.T) {
	check := func(t *testing.T, r loadRun, want map[string]float64) {
		t.Helper()
		if r.Exit != 0 || r.Summary.Errors != 0 {
			t.Errorf("rpcload exit %d, %d errors (%s)", r.Exit, r.Summary.Errors, r.Summary.FirstError)
		}
		for host, w := range want {
			if got, _, _ := r.Summary.share(d.cli[host].addr); got < w-3 || got > w+3 {
				t.Errorf("%s took %.1f %% of the attempts, want %.1f ± 3", host, got, w)
			}
		}
	}
	t.Run("round-robin", func(t *testing.T) {
		r := d.rpcload(t, "", 2, nil, "--balancer", "round-robin", "--inflight", "4")
		d.figure("balance round-robin: rpcload --balancer round-robin --inflight 4 --seconds 2: %d calls (%.0f/s), %d errors: %s",
			r.Summary.Calls, float64(r.Summary.Calls)/r.Summary.Elapsed, r.Summary.Errors, d.cliShares(r.Summary))
		check(t, r, map[string]float64{"s1": 100.0 / 3, "s2": 100.0 / 3, "s3": 100.0 / 3})
	})
	t.Run("weighted", func(t *testing.T) {
		r := d.rpcload(t, "", 2, nil, "--balancer", "weighted", "--inflight", "4")
		d.figure("balance weighted (serve --weight 1, 2, 3): rpcload --balancer weighted --inflight 4 --seconds 2: %d calls, %d errors: %s (want 16.7 / 33.3 / 50.0 %%)",
			r.Summary.Calls, r.Summary.Errors, d.cliShares(r.Summary))
		check(t, r, map[string]float64{"s1": 100.0 / 6, "s2": 200.0 / 6, "s3": 300.0 / 6})
	})
	t.Run("p2c", func(t *testing.T) {
		if runtime.NumCPU() < 2 {
			d.figure("balance p2c: not run: one CPU (the hog needs one of its own with s3, apart from the client's)")
			t.Skip("one CPU")
		}
		s3 := d.cli["s3"].addr
		args := []string{"--balancer", "p2c", "--inflight", "8"}
		base := d.rpcload(t, clientCPU, 2, nil, args...)
		d.figure("balance p2c: rpcload --balancer p2c --inflight 8 --seconds 2 (pinned to CPU %s; s3's serve alone on CPU %s): %d calls, p99 %.0f µs: %s",
			clientCPU, hogCPU, base.Summary.Calls, base.Summary.P99, d.cliShares(base.Summary))
		hog := d.startHog(t)
		hogged := d.rpcload(t, clientCPU, 2, nil, args...)
		hog.kill()
		d.figure("balance p2c, a CPU hog (a process of %d busy loops pinned with taskset to CPU %s, in s3's netns) beside s3: %d calls, p99 %.0f µs: %s",
			hogThreads, hogCPU, hogged.Summary.Calls, hogged.Summary.P99, d.cliShares(hogged.Summary))
		// The baseline is reported, not asserted: alone on its CPU, s3
		// answers after a cross-CPU wakeup, which on a VM can make it the
		// slowest at a light load, and p2c then leaves it (and its CPU)
		// idle, which keeps it so: from 0 to a third over runs.
		if got, _, _ := hogged.Summary.share(s3); got > 5 {
			t.Errorf("s3 beside a CPU hog took %.1f %% of the attempts, want under 5 %% (a third would be its even share)", got)
		}
		if hogged.Exit != 0 || hogged.Summary.Errors != 0 {
			t.Errorf("rpcload exit %d, %d errors (%s)", hogged.Exit, hogged.Summary.Errors, hogged.Summary.FirstError)
		}
	})
}

// hogThreads is the number of the hog's busy loops on its CPU.
const hogThreads = 4

// startHog runs the hog role in s3's host, pinned to hogCPU.
func (d *drill) startHog(t *testing.T) *proc {
	t.Helper()
	ready := make(chan struct{}, 1)
	p := d.lab.run("s3", "hog", []string{"taskset", "-c", hogCPU, d.lab.exe, "-test.run=^TestDrillHelper$"},
		[]string{drillRoleEnv + "=hog", "GOMAXPROCS=" + strconv.Itoa(hogThreads)}, true, func(_ time.Time, line string) {
			if line == "ready" {
				ready <- struct{}{}
			}
		}, nil)
	select {
	case <-ready:
	case <-p.exited:
		t.Fatalf("hog exited: %s", p.stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("hog not ready in 10 s: %s", p.stderr.String())
	}
	return p
}

// sigkill: s1's lifenet serve and role server killed with SIGKILL at once,
// 1 s into an rpcload and a role load.
func (d *drill) sigkill(t *testing.T) {
	cliVictim, roleVictim := d.cli["s1"], d.servers["s1"]
	d.cmd(t, drillCmd{Op: "start", Balancer: "round-robin", Conc: 8, Timeout: 2 * time.Second, Attempts: 3, Duration: 30 * time.Second}, 20*time.Second)
	var killed time.Time
	r := d.rpcload(t, "", 9, func(time.Time) {
		time.Sleep(time.Second)
		killed = cliVictim.p.signal()
		roleVictim.p.signal()
		cliVictim.p.kill()
		roleVictim.p.kill()
	}, "--balancer", "round-robin", "--inflight", "8")
	rep := d.cmd(t, drillCmd{Op: "stop"}, 30*time.Second)
	t.Run("rpcload", func(t *testing.T) { d.sigkillCLI(t, r, cliVictim, killed) })
	t.Run("role", func(t *testing.T) { d.sigkillRole(t, rep, roleVictim, killed) })
	delete(d.servers, "s1")
	delete(d.cli, "s1")
}

func (d *drill) sigkillCLI(t *testing.T, r loadRun, victim *drillServer, killed time.Time) {
	s := r.Summary
	share, att, unav := s.share(victim.addr)
	gone := time.Duration(-1)
	if e, ok := r.first("endpoint set", "removedAddrs", victim.addr, killed); ok {
		gone = e.At.Sub(killed)
	}
	d.figure("sigkill (rpcload): s1's lifenet serve killed 1 s into rpcload --balancer round-robin --inflight 8 --seconds 9 (--attempts 3: only calls never sent are resent): %d calls, %d errors (e.g. %q), exit %d: %s",
		s.Calls, s.Errors, s.FirstError, r.Exit, d.cliShares(s))
	d.figure("sigkill (rpcload): s1's attempts %d (%.1f %%), %d of them unavailable (the calls in flight as its connection closed, and those that found it refused: each shields it for the balancer's ShieldTime, 10 s); s1 left the resolver's set %v after the kill (TTL %v)",
		att, share, unav, gone.Round(time.Millisecond), drillTTL)
	if s.Errors > 8 {
		t.Errorf("%d calls failed, want at most the 8 callers' calls in flight on s1", s.Errors)
	}
	if s.Errors > 0 && !strings.Contains(s.FirstError, "connection closed") {
		t.Errorf("the first error %q, want a connection closed", s.FirstError)
	}
	if unav < uint64(s.Errors) {
		t.Errorf("s1 unavailable %d times, fewer than the %d errors", unav, s.Errors)
	}
	if gone < 0 || gone > drillTTL+2*time.Second {
		t.Errorf("s1 left rpcload's set %v after the kill, want within the TTL %v (+2 s)", gone, drillTTL)
	}
	if r.Exit != 0 {
		t.Errorf("rpcload exit %d", r.Exit)
	}
}

func (d *drill) sigkillRole(t *testing.T, r drillReply, victim *drillServer, killed time.Time) {
	recs := r.Records
	kns := killed.UnixNano()
	ok, failed, n := tally(recs)
	d.checkRuns(t, recs)

	// The client sees the death when s1's connection closes, a moment
	// after the signal went: the first failure's end.
	seen := int64(0)
	for _, rec := range recs {
		if rec.Kind != "ok" && (seen == 0 || rec.End < seen) {
			seen = rec.End
		}
	}
	var fails, ranFails, inGap int
	var lastFail time.Duration
	var sample string
	for _, rec := range recs {
		if rec.Kind == "ok" {
			continue
		}
		fails++
		sample = rec.Err
		if rec.Kind != "closed" {
			t.Errorf("call %d failed with %s (%s), want rpc.ErrConnClosed", rec.ID, rec.Kind, rec.Err)
		}
		if a := lastAttempt(rec); a.Addr != victim.addr {
			t.Errorf("call %d failed on %s, not on the killed server", rec.ID, d.nameOf(a.Addr))
		}
		if rec.Start > seen {
			t.Errorf("call %d started %v after the client saw s1's connection close and failed: %s", rec.ID, time.Duration(rec.Start-seen), rec.Err)
		}
		if rec.Start > kns {
			inGap++
		}
		lastFail = max(lastFail, time.Duration(rec.End-kns))
		if runs := d.ranOn(rec.ID); len(runs) == 1 {
			ranFails++
		}
	}
	var last int64
	var after []string
	for _, rec := range recs {
		for _, p := range attempts(rec) {
			if p.Addr == victim.addr {
				last = max(last, p.At)
				if p.At > kns {
					after = append(after, fmt.Sprintf("+%v %s", time.Duration(p.At-kns).Round(time.Millisecond), rec.Kind))
				}
			}
		}
	}
	gone := time.Duration(-1)
	for _, s := range r.Sets {
		if s.At > kns && !slices.Contains(s.Addrs, victim.addr) {
			gone = time.Duration(s.At - kns)
			break
		}
	}
	lastAfter := time.Duration(last - kns)
	d.figure("sigkill (role): s1's role server killed at the same moment, under a role load of 8 goroutines (round-robin, non-idempotent calls, %v each, retries 3): %d calls in %v, %d ok (%s)",
		drillBaseDelay, len(recs), span(recs), n, sharesText(ok, n))
	d.figure("sigkill (role): the client saw s1's connection close %v after the SIGKILL went; %d calls failed %v, all in flight on s1 then (%d picked for it between the signal and the close; %d had started running on s1), the last %v after the kill; e.g. %q",
		time.Duration(seen-kns).Round(100*time.Microsecond), fails, failed, inGap, ranFails, lastFail.Round(time.Millisecond), sample)
	if r.Issued != int64(len(recs)) {
		t.Errorf("%d calls begun, %d ended", r.Issued, len(recs))
	}
	d.figure("sigkill (role): attempts sent to s1 after the kill: %d %v; the last %v after the kill; s1 left the resolver's set %v after the kill (TTL %v)",
		len(after), after, lastAfter.Round(time.Millisecond), gone.Round(time.Millisecond), drillTTL)
	if lastAfter > time.Second {
		t.Errorf("an attempt went to the killed server %v after the kill, want ≤ 1 s", lastAfter)
	}
	if gone < 0 || gone > drillTTL+2*time.Second {
		t.Errorf("s1 left the role client's set %v after the kill, want within the TTL %v (+2 s)", gone, drillTTL)
	}
	if fails == 0 {
		t.Log("no call was in flight on s1 at the kill")
	}
}

// partition: s2's switch port set down, for less than the lease's TTL
// (short: the registration survives, s2 is shielded by the clients and
// probed back) and for longer (long: its lease expires, the resolvers
// drop it, and it registers again).
func (d *drill) partition(t *testing.T) {
	t.Run("short", d.partitionShort)
	t.Run("long", d.partitionLong)
}

const (
	partitionCallTimeout = 500 * time.Millisecond // the role load's
	partitionShortDown   = 3 * time.Second
	partitionLongDown    = 8 * time.Second
)

func (d *drill) partitionShort(t *testing.T) {
	d.cmd(t, drillCmd{Op: "start", Balancer: "round-robin", Conc: 6, Timeout: partitionCallTimeout, Attempts: 3, Duration: 30 * time.Second}, 20*time.Second)
	var cut, healed time.Time
	r := d.rpcload(t, "", 7, func(time.Time) {
		time.Sleep(time.Second)
		// Cut off from the down command's return to the up command's start.
		d.lab.link("s2", false)
		cut = time.Now()
		time.Sleep(partitionShortDown)
		healed = time.Now()
		d.lab.link("s2", true)
	}, "--balancer", "round-robin", "--inflight", "8")
	rep := d.cmd(t, drillCmd{Op: "stop"}, 30*time.Second)
	t.Run("rpcload", func(t *testing.T) { d.partitionCLI(t, r, cut, healed) })
	t.Run("role", func(t *testing.T) { d.partitionRole(t, rep, cut, healed, partitionShortDown, false) })
}

func (d *drill) partitionLong(t *testing.T) {
	victim := d.servers["s2"]
	d.cmd(t, drillCmd{Op: "start", Balancer: "round-robin", Conc: 6, Timeout: partitionCallTimeout, Attempts: 3, Duration: 40 * time.Second}, 20*time.Second)
	time.Sleep(time.Second)
	d.lab.link("s2", false)
	cut := time.Now()
	time.Sleep(partitionLongDown)
	healed := time.Now()
	d.lab.link("s2", true)
	if _, ok := victim.registeredAfter(healed, 10*time.Second); ok {
		time.Sleep(time.Second) // past the resolver's debounce and a few calls
	}
	rep := d.cmd(t, drillCmd{Op: "stop"}, 30*time.Second)
	d.partitionRole(t, rep, cut, healed, partitionLongDown, true)
	if at, ok := d.cli["s2"].registeredAfter(healed, 0); ok {
		d.figure("partition long: s2's lifenet serve registered again %v after the link came back (states %v)",
			at.Sub(healed).Round(time.Millisecond), d.cli["s2"].statesSince(cut))
	} else {
		t.Errorf("s2's lifenet serve did not register again after the link came back (states %v)", d.cli["s2"].statesSince(cut))
	}
}

// partitionCLI reads the short partition in rpcload's log and summary.
func (d *drill) partitionCLI(t *testing.T, r loadRun, cut, healed time.Time) {
	victim := d.cli["s2"].addr
	s := r.Summary
	share, att, _ := s.share(victim)
	d.figure("partition short (rpcload): s2's switch port down %v, 1 s into rpcload --balancer round-robin --inflight 8 --seconds 7 (call timeout: rpcload's, 15 s): %d calls, %d errors, exit %d, max latency %.2f s: %s",
		partitionShortDown, s.Calls, s.Errors, r.Exit, s.Max/1e6, d.cliShares(s))
	sh, shielded := r.first("endpoint shielded", "addr", victim, cut)
	back, isBack := r.first("endpoint back", "addr", victim, healed)
	_, removed := r.first("endpoint set", "removedAddrs", victim, cut)
	switch {
	case !shielded || !sh.At.Before(healed):
		t.Errorf("rpcload's cluster client did not shield s2 while it was cut off (events %v)", r.Events)
	case !isBack:
		t.Errorf("s2 not back after the link came back (events %v)", r.Events)
	default:
		d.figure("partition short (rpcload): s2 shielded (%s: %s) %v after the cut; back %v after the link came back (probe interval 1 s); s2's attempts %d (%.1f %%); the resolver's set unchanged: %v",
			sh.Fields["health"], sh.Fields["why"], sh.At.Sub(cut).Round(time.Millisecond), back.At.Sub(healed).Round(time.Millisecond), att, share, !removed)
		if dt := back.At.Sub(healed); dt > 2*time.Second {
			t.Errorf("s2 back %v after the link, want within a probe period (1 s, +1 s)", dt)
		}
	}
	if removed {
		t.Errorf("s2 left rpcload's set during a %v partition: its lease (TTL %v) expired, so the row shows no probe", partitionShortDown, drillTTL)
	}
	if s.Errors != 0 || r.Exit != 0 {
		t.Errorf("rpcload: %d errors (%s), exit %d; want none (the calls stuck on s2 wait for the link: 15 s timeout)", s.Errors, s.FirstError, r.Exit)
	}
}

// partitionRole reads a partition in the role client's records: the
// calls on s2 at the cut and those sent to it before it was shielded end
// at their deadline; none is sent to it once it is shielded; after the
// link: back by a probe (short) or by registering again (long).
func (d *drill) partitionRole(t *testing.T, r drillReply, cut, healed time.Time, down time.Duration, long bool) {
	row := "partition short (role)"
	if long {
		row = "partition long (role)"
	}
	victim := d.servers["s2"]
	recs := r.Records
	cns, hns := cut.UnixNano(), healed.UnixNano()
	d.checkRuns(t, recs)

	shieldAt := int64(0)
	var shieldHow string
	backAt := int64(0)
	for _, e := range r.Events {
		switch {
		case e.Addr != victim.addr:
		case e.Msg == "endpoint shielded" && shieldAt == 0 && e.At > cns:
			shieldAt, shieldHow = e.At, e.Health
		case e.Msg == "endpoint back" && backAt == 0 && e.At > hns:
			backAt = e.At
		}
	}
	// Calls on s2 when it was cut off (sent before the cut, ended after
	// it), sent to it while cut off (before and after the shield).
	var atCut, before, after, timeouts, ranEarly, ranLate int
	var dmin, dmax time.Duration
	var lastSent int64
	kinds := map[string]int{}
	for _, rec := range recs {
		p := lastAttempt(rec)
		if p.Addr == "" {
			continue
		}
		if p.Addr != victim.addr {
			if rec.Kind != "ok" {
				t.Errorf("call %d on %s failed: %s", rec.ID, d.nameOf(p.Addr), rec.Err)
			}
			continue
		}
		switch {
		case p.At < cns && rec.End > cns:
			atCut++
		case p.At >= cns && p.At < hns:
			lastSent = max(lastSent, p.At)
			if shieldAt > 0 && p.At > shieldAt+int64(10*time.Millisecond) {
				after++
			} else {
				before++
			}
			if rec.Kind == "ok" && !long {
				t.Errorf("call %d, sent to s2 while it was cut off, succeeded", rec.ID)
			}
		default:
			continue
		}
		kinds[rec.Kind]++
		if rec.Kind == "timeout" {
			timeouts++
			took := time.Duration(rec.End - rec.Start)
			if dmin == 0 || took < dmin {
				dmin = took
			}
			dmax = max(dmax, took)
			for _, run := range d.ranOn(rec.ID) {
				if run.At < hns {
					ranEarly++
				} else {
					ranLate++
				}
			}
		}
	}
	removed, readded := time.Duration(-1), time.Duration(-1)
	for _, s := range r.Sets {
		has := slices.Contains(s.Addrs, victim.addr)
		if removed < 0 && s.At > cns && s.At < hns && !has {
			removed = time.Duration(s.At - cns)
		}
		if readded < 0 && s.At > hns && has && removed >= 0 {
			readded = time.Duration(s.At - hns)
		}
	}
	firstOK := time.Duration(-1)
	for _, rec := range recs {
		if rec.Kind == "ok" && rec.Who == "s2" && rec.Start > hns {
			if dt := time.Duration(rec.End - hns); firstOK < 0 || dt < firstOK {
				firstOK = dt
			}
		}
	}
	ok, failed, n := tally(recs)
	d.figure("%s: s2's switch port down %v, 1 s into a round-robin load of 6 goroutines (call timeout %v): %d calls in %v, %d ok (%s), failed %v",
		row, down, partitionCallTimeout, len(recs), span(recs), n, sharesText(ok, n), failed)
	shield := "never"
	if shieldAt > 0 {
		shield = fmt.Sprintf("%v after the cut (%s)", time.Duration(shieldAt-cns).Round(time.Millisecond), shieldHow)
	}
	d.figure("%s: calls on s2 at the cut %d, sent to it while cut off %d before its shield and %d after: %v; the timeouts took %v – %v; of those, %d ran on s2 before the link came back (their replies lost) and %d after it (requests retransmitted by TCP, after the caller had its timeout); s2 shielded %s",
		row, atCut, before, after, kinds, dmin.Round(time.Millisecond), dmax.Round(time.Millisecond), ranEarly, ranLate, shield)
	if shieldAt == 0 || shieldAt > hns {
		t.Errorf("s2 not shielded while cut off (events %v)", r.Events)
	}
	if after > 0 {
		t.Errorf("%d calls sent to s2 after it was shielded, while it was cut off", after)
	}
	if kinds["ok"]+timeouts != atCut+before+after {
		t.Errorf("calls on the cut-off s2 that neither timed out nor succeeded: %v", kinds)
	}
	if dmin > 0 && (dmin < partitionCallTimeout-20*time.Millisecond || dmax > partitionCallTimeout+300*time.Millisecond) {
		t.Errorf("timeouts took %v – %v, want about %v", dmin, dmax, partitionCallTimeout)
	}
	if !long {
		back := time.Duration(-1)
		if backAt > 0 {
			back = time.Duration(backAt - hns)
		}
		d.figure("%s: link up: s2 back (a probe on a new connection) %v later, its first answer %v later; the resolver's set unchanged: %v",
			row, back.Round(time.Millisecond), firstOK.Round(time.Millisecond), removed < 0)
		if back < 0 || back > 2*time.Second {
			t.Errorf("s2 back %v after the link, want within a probe period (1 s, +1 s)", back)
		}
		if removed >= 0 {
			t.Errorf("s2 left the set %v after the cut: its lease expired in a %v partition", removed, down)
		}
		return
	}
	regAt, registered := victim.registeredAfter(healed, 0)
	d.figure("%s: s2 left the resolver's set %v after the cut (its lease, TTL %v, expired); link up: s2 registered again %v later, back in the set %v later, its first answer %v later (states %v)",
		row, removed.Round(time.Millisecond), drillTTL, regAt.Sub(healed).Round(time.Millisecond), readded.Round(time.Millisecond), firstOK.Round(time.Millisecond), victim.statesSince(cut))
	if removed < 0 {
		t.Errorf("s2 never left the resolver's set while cut off")
	}
	if !registered {
		t.Errorf("s2 did not register again after the link came back (states %v)", victim.statesSince(cut))
	}
	if firstOK < 0 || firstOK > drillTTL {
		t.Errorf("s2's first answer %v after the link came back, want within the TTL %v", firstOK, drillTTL)
	}
}

// etcdDown: etcd killed under load, then started again on its data.
func (d *drill) etcdDown(t *testing.T) {
	const outage = drillTTL + time.Second // past the TTL: every registration is lost, and must come back
	live := slices.Sorted(maps.Keys(d.servers))
	d.cmd(t, drillCmd{Op: "start", Balancer: "round-robin", Conc: 4, Timeout: time.Second, Attempts: 3, Duration: 40 * time.Second}, 20*time.Second)
	time.Sleep(time.Second)
	killed := d.etcd.kill()
	time.Sleep(outage)
	restarted := time.Now()
	ready := d.startEtcd()
	var backs []string
	for _, s := range live {
		for _, srv := range []*drillServer{d.servers[s], d.cli[s]} {
			kind := "role server"
			if srv == d.cli[s] {
				kind = "lifenet serve"
			}
			at, ok := srv.registeredAfter(ready, drillTTL+2*time.Second)
			if !ok {
				t.Errorf("%s's %s did not register again within %v of etcd's return (states %v)", s, kind, drillTTL+2*time.Second, srv.statesSince(killed))
				continue
			}
			dt := at.Sub(ready)
			backs = append(backs, fmt.Sprintf("%s %s +%v (states %v)", s, kind, dt.Round(time.Millisecond), srv.statesSince(killed)))
			if dt > drillTTL {
				t.Errorf("%s's %s registered %v after etcd's return, want within the TTL %v", s, kind, dt, drillTTL)
			}
		}
	}
	time.Sleep(time.Second)
	r := d.cmd(t, drillCmd{Op: "stop"}, 30*time.Second)
	recs := r.Records
	d.checkRuns(t, recs)
	kns, rns := killed.UnixNano(), ready.UnixNano()
	var during []drillRecord
	for _, rec := range recs {
		if rec.Start > kns && rec.End < rns {
			during = append(during, rec)
		}
	}
	okD, failedD, nD := tally(during)
	ok, failed, n := tally(recs)
	var setsDuring []drillSet
	for _, s := range r.Sets {
		if s.At > kns && s.At < rns {
			setsDuring = append(setsDuring, s)
		}
	}
	d.figure("etcd-down: lifenet-etcd SIGKILLed 1 s into a round-robin load of 4 goroutines (role client), down %v, started again on its data dir, READY in %v: %d calls in %v, %d ok (%s), failed %v",
		outage, ready.Sub(restarted).Round(time.Millisecond), len(recs), span(recs), n, sharesText(ok, n), failed)
	d.figure("etcd-down: while etcd was down: %d calls, %d ok (%s), failed %v; endpoint sets reported: %d",
		len(during), nD, sharesText(okD, nD), failedD, len(setsDuring))
	d.figure("etcd-down: registrations back after etcd's return: %v", backs)
	if len(during) == 0 || nD != len(during) {
		t.Errorf("while etcd was down: %d calls, %d ok, failed %v", len(during), nD, failedD)
	}
	if len(setsDuring) > 0 {
		t.Errorf("the resolver reported sets while etcd was down: %v", setsDuring)
	}
	if n != len(recs) {
		t.Errorf("%d of %d calls failed: %v", len(recs)-n, len(recs), failed)
	}
}

// fourth: a fourth server started mid-load.
func (d *drill) fourth(t *testing.T) {
	d.cmd(t, drillCmd{Op: "start", Balancer: "round-robin", Conc: 4, Timeout: time.Second, Attempts: 3, Duration: 30 * time.Second}, 20*time.Second)
	time.Sleep(time.Second)
	started := time.Now()
	s4 := d.startServer(t, "s4", 1)
	reg, _ := s4.registeredAfter(started, time.Second)
	time.Sleep(2 * time.Second)
	r := d.cmd(t, drillCmd{Op: "stop"}, 30*time.Second)
	recs := r.Records
	d.checkRuns(t, recs)
	rns := reg.UnixNano()
	firstPick, firstOK, inSet := time.Duration(-1), time.Duration(-1), time.Duration(-1)
	var after []drillRecord
	for _, rec := range recs {
		for _, p := range attempts(rec) {
			if p.Addr == s4.addr && (firstPick < 0 || time.Duration(p.At-rns) < firstPick) {
				firstPick = time.Duration(p.At - rns)
			}
		}
		if rec.Kind == "ok" && rec.Who == "s4" && (firstOK < 0 || time.Duration(rec.End-rns) < firstOK) {
			firstOK = time.Duration(rec.End - rns)
		}
		if rec.Start > rns+int64(time.Second) {
			after = append(after, rec)
		}
	}
	for _, s := range r.Sets {
		if slices.Contains(s.Addrs, s4.addr) {
			inSet = time.Duration(s.At - rns)
			break
		}
	}
	ok, failed, n := tally(recs)
	okA, _, nA := tally(after)
	d.figure("fourth-server: s4 (a role server) started 1 s into a round-robin load of 4 goroutines, registered %v after its start; in the resolver's set %v after registering, first picked %v after, first answer %v after",
		reg.Sub(started).Round(time.Millisecond), inSet.Round(time.Millisecond), firstPick.Round(time.Millisecond), firstOK.Round(time.Millisecond))
	d.figure("fourth-server: %d calls in %v, %d ok (%s), failed %v; from 1 s after its registration: %s",
		len(recs), span(recs), n, sharesText(ok, n), failed, sharesText(okA, nA))
	if firstOK < 0 || firstOK > time.Second {
		t.Errorf("s4's first answer %v after it registered, want within 1 s", firstOK)
	}
	if n != len(recs) {
		t.Errorf("%d of %d calls failed: %v", len(recs)-n, len(recs), failed)
	}
}
