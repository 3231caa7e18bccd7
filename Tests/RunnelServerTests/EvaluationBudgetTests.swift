import Runnel
import Testing

@testable import RunnelServer

/// `EvaluationBudget` (a connection's token bucket of steps) and `PublishEvaluationBound` (one
/// publish's evaluations held to a time), on a virtual clock.
struct EvaluationBudgetTests {
    let clock = TestScheduler()

    func advance(milliseconds: Int64) { clock.advance(by: .milliseconds(milliseconds)) }

    @Test func aFullBudgetAdmitsUntilItsStepsAreSpent() {
        let budget = EvaluationBudget(stepsPerSecond: 1000, burstSteps: 5000, clock: clock)
        for _ in 0..<5 {
            #expect(budget.admits())
            budget.charge(1000)
        }
        #expect(budget.balance == 0)
        #expect(!budget.admits())
    }

    @Test func oneEvaluationMayOverdrawWhatIsLeftAndThenWaitsForIt() {
        let budget = EvaluationBudget(stepsPerSecond: 1000, burstSteps: 5000, clock: clock)
        #expect(budget.admits())
        budget.charge(8000)
        #expect(budget.balance == -3000)
        advance(milliseconds: 2999)
        #expect(!budget.admits(), "2,999 steps put back, the balance is still below zero")
        advance(milliseconds: 2)
        #expect(budget.admits())
        #expect(budget.balance == 1)
    }

    @Test func timeRefillsAtTheRateUpToTheBurstOnly() {
        let budget = EvaluationBudget(stepsPerSecond: 10_000, burstSteps: 5000, clock: clock)
        budget.charge(5000)
        advance(milliseconds: 100)
        #expect(budget.admits())
        #expect(budget.balance == 1000)
        // Counted when the steps run out: a minute earns 600,000 steps, the burst holds 5,000.
        advance(milliseconds: 60_000)
        budget.charge(1000)
        #expect(budget.admits())
        #expect(budget.balance == 5000)
    }

    /// The time a budget sits full earns nothing: spending starts the refill's count, so a
    /// connection idle for an hour still gets one burst, not two.
    @Test func timeSpentFullIsNotBankedForLater() {
        let budget = EvaluationBudget(stepsPerSecond: 1000, burstSteps: 5000, clock: clock)
        advance(milliseconds: 3_600_000)
        #expect(budget.admits())
        budget.charge(5000)
        #expect(!budget.admits())
        advance(milliseconds: 1)
        #expect(budget.admits())
        #expect(budget.balance == 1)
    }

    @Test func aReloadKeepsWhatWasSpentWithinTheNewBurst() {
        let budget = EvaluationBudget(stepsPerSecond: 1000, burstSteps: 5000, clock: clock)
        budget.charge(1000)
        budget.configure(stepsPerSecond: 1000, burstSteps: 2000)
        #expect(budget.balance == 2000)
        budget.charge(2000)
        budget.configure(stepsPerSecond: 1_000_000, burstSteps: 100_000)
        #expect(budget.balance == 0)
        #expect(!budget.admits())
        advance(milliseconds: 1)
        #expect(budget.admits())
        #expect(budget.balance == 1000)
    }

    /// Two loops' budgets of one token draw on its pool a lease (a 64th of the burst) at a
    /// time: together they spend what one bucket allows, and one loop's overdraw, settled as it
    /// happens, leaves the other only the lease it holds.
    @Test func theLoopsOfOneTokenShareItsPoolALeaseAtATime() {
        let pool = TokenStepPool(stepsPerSecond: 1000, burstSteps: 6400, clock: clock)
        let first = EvaluationBudget(drawing: pool, clock: clock)
        let second = EvaluationBudget(drawing: pool, clock: clock)
        #expect(first.balance == 0)
        #expect(first.admits() && first.balance == 100)
        first.charge(50)
        #expect(second.admits() && second.balance == 100)
        // 6,300 steps overdrawn come off the pool's 6,200 left: 100 owed, no lease.
        second.charge(6400)
        #expect(second.balance == 0 && !second.admits())
        #expect(first.admits(), "the 50 steps of its lease are still the first's")
        first.charge(50)
        #expect(!first.admits())
        advance(milliseconds: 100)
        #expect(!second.admits(), "the 100 steps put back pay what was owed")
        advance(milliseconds: 1)
        #expect(second.admits() && second.balance == 1)
        // A reload's rate applies to every loop's budget at once, through the pool.
        pool.configure(stepsPerSecond: 1_000_000, burstSteps: 6400)
        second.charge(1)
        advance(milliseconds: 1)
        #expect(first.admits() && first.balance == 100)
    }

    @Test func outsideAPublishEveryEvaluationIsAdmitted() {
        let bound = PublishEvaluationBound(milliseconds: 5, clock: clock)
        var tally = PublishEvaluationBound.Tally()
        for _ in 0..<10 {
            #expect(bound.admits(tally))
            advance(milliseconds: 10)
            bound.charge(1_000_000, to: &tally)
        }
    }

    @Test func aPublishPastItsBoundRefusesTheRestOfItsEvaluations() {
        let bound = PublishEvaluationBound(milliseconds: 5, clock: clock)
        var tally = PublishEvaluationBound.Tally()
        bound.beginPublish()
        // The deadline counts from the first clock reading, after `clockReadSteps` steps.
        advance(milliseconds: 100)
        #expect(bound.admits(tally))
        bound.charge(PublishEvaluationBound.clockReadSteps, to: &tally)
        advance(milliseconds: 4)
        bound.charge(1, to: &tally)
        #expect(bound.admits(tally))
        advance(milliseconds: 1)
        bound.charge(1, to: &tally)
        #expect(bound.admits(tally), "the clock is read only every clockReadSteps steps")
        bound.charge(PublishEvaluationBound.clockReadSteps, to: &tally)
        #expect(!bound.admits(tally))
        bound.endPublish()
        #expect(bound.admits(tally), "outside a publish")
        bound.beginPublish()
        #expect(bound.admits(tally), "the next publish has a deadline of its own")
        bound.endPublish()
    }

    /// A publish whose evaluations add up to fewer than `clockReadSteps` steps never reads the
    /// clock, so it is never refused, however long they take: they are too few to stall the loop.
    @Test func aPublishBelowOneClockReadingIsNeverRefused() {
        let bound = PublishEvaluationBound(milliseconds: 1, clock: clock)
        var tally = PublishEvaluationBound.Tally()
        bound.beginPublish()
        bound.charge(PublishEvaluationBound.clockReadSteps - 1, to: &tally)
        advance(milliseconds: 1000)
        #expect(bound.admits(tally))
        bound.endPublish()
        bound.beginPublish()
        bound.charge(PublishEvaluationBound.clockReadSteps, to: &tally)
        advance(milliseconds: 1)
        bound.charge(PublishEvaluationBound.clockReadSteps, to: &tally)
        #expect(!bound.admits(tally), "past clockReadSteps, the same publish is bounded")
        bound.endPublish()
    }

    @Test func everyEvaluationCountsForAFewStepsAtLeast() {
        let bound = PublishEvaluationBound(milliseconds: 1, clock: clock)
        var tally = PublishEvaluationBound.Tally()
        bound.beginPublish()
        let cheapEvaluations = PublishEvaluationBound.clockReadSteps / PublishEvaluationBound.stepsPerEvaluation
        // The first clock reading, after `cheapEvaluations` evaluations of one step each.
        for _ in 0..<cheapEvaluations { bound.charge(1, to: &tally) }
        #expect(bound.admits(tally))
        advance(milliseconds: 2)
        for _ in 0..<cheapEvaluations { bound.charge(1, to: &tally) }
        #expect(!bound.admits(tally))
        bound.endPublish()
    }

    @Test func aReloadChangesTheBoundOfTheNextPublish() {
        let bound = PublishEvaluationBound(milliseconds: 5, clock: clock)
        var tally = PublishEvaluationBound.Tally()
        bound.configure(milliseconds: 50)
        bound.beginPublish()
        #expect(bound.admits(tally))
        bound.charge(PublishEvaluationBound.clockReadSteps, to: &tally)
        advance(milliseconds: 40)
        bound.charge(PublishEvaluationBound.clockReadSteps, to: &tally)
        #expect(bound.admits(tally))
        advance(milliseconds: 10)
        bound.charge(PublishEvaluationBound.clockReadSteps, to: &tally)
        #expect(!bound.admits(tally))
        bound.endPublish()
    }

    /// Past the deadline, the connections that made the publish expensive are refused and a
    /// cheap one reached later still evaluates, until half the bound again has passed.
    @Test func pastItsBoundAPublishRefusesTheConnectionsThatSpentMostFirst() {
        let bound = PublishEvaluationBound(milliseconds: 10, clock: clock)
        var attacker = PublishEvaluationBound.Tally()
        var other = PublishEvaluationBound.Tally()
        var cheap = PublishEvaluationBound.Tally()
        bound.beginPublish()
        #expect(bound.admits(attacker))
        bound.charge(PublishEvaluationBound.clockReadSteps, to: &attacker)
        advance(milliseconds: 10)
        bound.charge(PublishEvaluationBound.clockReadSteps * 2, to: &attacker)
        #expect(bound.admits(other), "a connection with nothing spent in this publish")
        bound.charge(PublishEvaluationBound.clockReadSteps, to: &other)
        #expect(!bound.admits(attacker), "30,000 steps of 40,000 over two connections: above the average")
        #expect(bound.admits(other), "10,000 steps of 40,000 over two connections: below the average")
        #expect(bound.admits(cheap))
        bound.charge(1, to: &cheap)
        #expect(bound.admits(cheap), "16 steps, far below the average")
        advance(milliseconds: 5)
        bound.charge(PublishEvaluationBound.clockReadSteps, to: &cheap)
        #expect(!bound.admits(cheap), "half the bound again has passed: nobody evaluates")
        bound.endPublish()
        bound.beginPublish()
        #expect(bound.admits(attacker), "a new publish starts every connection afresh")
        bound.endPublish()
    }
}
