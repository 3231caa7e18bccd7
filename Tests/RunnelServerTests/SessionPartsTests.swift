import Runnel
import RunnelProtocol
import RunnelUV
import Testing

@testable import RunnelServer

/// The parts a session is made of, each on its own: the subscription table, the slow-consumer
/// lag and the session's state.
@Suite struct SessionPartsTests {
    private static func subscription(_ sid: String, pinned: Int = 10) -> SessionSubscription {
        let subscription = SessionSubscription(sid: sid, entry: nil, pattern: SubjectPattern("a.*"))
        subscription.pinnedBytes = pinned
        return subscription
    }

    // MARK: SubscriptionTable

    /// What a table tells of the subscriptions that go: here, of a store that has none.
    private static var occupancy: OccupancyTracker {
        OccupancyTracker(store: MemorySubjectStore(), scheduler: EventLoop().scheduler)
    }

    @Test func tableCountsWhatItsSubscriptionsHold() {
        let stats = ServerStats()
        let table = SubscriptionTable(stats: stats, interest: nil, occupancy: Self.occupancy, replicas: nil)
        let first = Self.subscription("a", pinned: 10)
        let second = Self.subscription("b", pinned: 5)
        table.insert(first)
        table.insert(second)
        #expect(table.count == 2 && table.pinnedBytes == 15 && stats.counts.subscriptions == 2)
        #expect(table["a"] === first)
        table.forget(first)
        #expect(table["a"] == nil && first.isFinished)
        #expect(table.count == 1 && table.pinnedBytes == 5 && stats.counts.subscriptions == 1)
        // Forgetting twice changes nothing.
        table.forget(first)
        #expect(table.pinnedBytes == 5 && stats.counts.subscriptions == 1)
        table.disposeAll()
        #expect(table.count == 0 && table.pinnedBytes == 0 && stats.counts.subscriptions == 0 && second.isFinished)
    }

    @Test func freshSidsSkipThoseInUse() {
        let table = SubscriptionTable(stats: ServerStats(), interest: nil, occupancy: Self.occupancy, replicas: nil)
        table.insert(Self.subscription("s2"))
        #expect(table.freshSid() == "s1")
        #expect(table.freshSid() == "s3")
    }

    // MARK: SlowConsumerLag

    @Test func lagPausesEachPublisherOnceAndLetsThemGoAtItsEnd() {
        let loop = EventLoop()
        let pauses = PublisherPauses(clock: loop.scheduler)
        let publisher = PublisherGate(pauses: pauses)
        let other = PublisherGate(pauses: pauses)
        let lag = SlowConsumerLag(graceTimer: nil, acknowledged: 0)
        #expect(lag.isPastGrace)
        lag.hold(publisher)
        lag.hold(publisher)
        lag.hold(other)
        #expect(publisher.laggards == 1 && other.laggards == 1 && pauses.pausedNow == 2)
        lag.end()
        #expect(publisher.laggards == 0 && other.laggards == 0 && pauses.pausedNow == 0)
        #expect(lag.publishers.isEmpty)
    }

    /// A pace holds a gate as a laggard does, but is no pause to `stats`; the publisher goes
    /// on once neither holds it.
    @Test func aPacedGateResumesOnceNeitherPaceNorLaggardHoldsIt() {
        let loop = EventLoop()
        let pauses = PublisherPauses(clock: loop.scheduler)
        let publisher = PublisherGate(pauses: pauses)
        var resumed = 0
        publisher.paceBegan()
        #expect(publisher.isPaused && pauses.pausedNow == 0)
        publisher.whenResumed { resumed += 1 }
        publisher.laggardBegan()
        #expect(pauses.pausedNow == 1 && pauses.pauses == 1)
        publisher.laggardEnded()
        #expect(publisher.isPaused && pauses.pausedNow == 0 && resumed == 0)
        publisher.paceEnded()
        #expect(!publisher.isPaused && resumed == 1)
    }

    @Test func lagHoldsPublishersWhileItDrainsAndLetsThemGoWhenItStalls() {
        let loop = EventLoop()
        let pauses = PublisherPauses(clock: loop.scheduler)
        let publisher = PublisherGate(pauses: pauses)
        let other = PublisherGate(pauses: pauses)
        let lag = SlowConsumerLag(graceTimer: Disposable(), acknowledged: 0)
        #expect(lag.holdWhileDraining(publisher, sent: 10))
        let timer = Disposable()
        let reading = SlowConsumerLag.drainProgress
        lag.drainCheckArmed(timer, acknowledged: 5)
        #expect(!lag.holdWhileDraining(publisher, sent: 12))
        #expect(!lag.holdWhileDraining(other, sent: 12))
        #expect(publisher.laggards == 1 && other.laggards == 1)
        // Acknowledged enough since the look began, the kernel having taken nothing more (a
        // reader emptying a full send buffer): the next is armed.
        #expect(lag.drainChecked(acknowledged: 5 + reading, sent: 12))
        lag.drainCheckArmed(Disposable(), acknowledged: 5 + reading)
        // Less since (a receive buffer nobody reads taking a little more): both go, and it is
        // stalled.
        #expect(!lag.drainChecked(acknowledged: 4 + 2 * reading, sent: 20))
        #expect(lag.isStalled && publisher.laggards == 0 && other.laggards == 0 && pauses.pausedNow == 0)
        #expect(!lag.holdWhileDraining(publisher, sent: 20))
        #expect(publisher.laggards == 0)
        // The kernel took more: it read again.
        #expect(lag.holdWhileDraining(publisher, sent: 21))
        #expect(!lag.isStalled && publisher.laggards == 1)
        let again = Disposable()
        lag.drainCheckArmed(again, acknowledged: 9)
        lag.end()
        #expect(again.isDisposed && lag.drainTimer == nil && publisher.laggards == 0)
    }

    @Test func lagMovesAPublisherHeldWhileDrainingToHeldUntilTheEnd() {
        let loop = EventLoop()
        let pauses = PublisherPauses(clock: loop.scheduler)
        let publisher = PublisherGate(pauses: pauses)
        let lag = SlowConsumerLag(graceTimer: nil, acknowledged: 0)
        #expect(lag.holdWhileDraining(publisher, sent: 0))
        lag.drainCheckArmed(Disposable(), acknowledged: 0)
        lag.hold(publisher)
        #expect(publisher.laggards == 1 && lag.drainingPublishers.isEmpty && lag.publishers.count == 1)
        // A look without progress keeps it: it is held until the end now.
        #expect(!lag.drainChecked(acknowledged: 0, sent: 0))
        #expect(publisher.laggards == 1)
        #expect(!lag.holdWhileDraining(publisher, sent: 0))
        lag.end()
        #expect(publisher.laggards == 0 && pauses.pausedNow == 0)
    }

    @Test func lagStopsItsGraceTimerAtItsEnd() {
        let timer = Disposable()
        let lag = SlowConsumerLag(graceTimer: timer, acknowledged: 0)
        #expect(!lag.isPastGrace)
        lag.end()
        #expect(timer.isDisposed && lag.graceTimer == nil)
    }

    @Test func lagPassesItsGraceWhenTheTimerFires() {
        let lag = SlowConsumerLag(graceTimer: Disposable(), acknowledged: 0)
        lag.graceTimerFired()
        #expect(lag.graceTimer == nil && !lag.isPastGrace)
        lag.passGrace()
        #expect(lag.isPastGrace)
        lag.end()
    }

    // MARK: SessionState

    @Test func stateOnlyMovesForward() {
        var state = SessionState.open
        state.advance(to: .closing)
        #expect(state == .closing)
        state.advance(to: .closing)
        state.advance(to: .closed)
        #expect(state == .closed)
    }
}
