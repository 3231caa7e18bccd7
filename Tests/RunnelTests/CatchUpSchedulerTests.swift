import RunnelTestSupport
import Synchronization
import Testing

@testable import Runnel

/// `CatchUpScheduler`: time operators run over a replay of timed values, on a virtual clock the
/// values' times move, then on the live scheduler, give what they give when the same values
/// come live at those times: the same outputs at the same instants, no window lost or doubled.
@Suite struct CatchUpSchedulerTests {
    /// What an operator chain sent, each with the instant it was sent at (milliseconds).
    final class Timeline<Value: Sendable>: Subscriber, Sendable {
        private let events = Mutex<[String]>([])
        let clock: @Sendable () -> SchedulerTime
        init(clock: @escaping @Sendable () -> SchedulerTime) { self.clock = clock }
        var all: [String] { events.withLock { $0 } }
        private func note(_ text: String) {
            let at = clock().nanoseconds / 1_000_000
            events.withLock { $0.append("\(at): \(text)") }
        }
        func sendNext(_ value: Value) { note("\(value)") }
        func sendError(_ error: any Error) { note("error \(error)") }
        func sendCompleted() { note("completed") }
        func didSubscribe(with disposable: CompoundDisposable) {}
    }

    static func at(_ milliseconds: Int) -> SchedulerTime { SchedulerTime(nanoseconds: Int64(milliseconds) * 1_000_000) }

    /// Values are their own times (ms). Those before `now` are in the past, the rest come live.
    static let times = [100, 200, 700, 1_300, 1_350, 2_600, 3_100, 3_900, 5_200]
    static let now = 2_800

    /// The chain seeing every value live, from 0.
    static func live<Output>(_ chain: (Signal<Int>, any Scheduler) -> Signal<Output>) -> [String] {
        let scheduler = TestScheduler()
        let subject = Subject<Int>()
        let timeline = Timeline<Output>(clock: { scheduler.now })
        scheduler.performAsCurrent { _ = chain(subject, scheduler).subscribe(timeline) }
        for time in times {
            scheduler.advance(to: at(time))
            scheduler.performAsCurrent { subject.sendNext(time) }
        }
        scheduler.advance(to: at(8_000))
        return timeline.all
    }

    /// The same chain subscribed at `now` to a replay of the values before it, then live.
    static func caughtUp<Output>(_ chain: (Signal<Int>, any Scheduler) -> Signal<Output>) -> [String] {
        let live = TestScheduler(start: at(now))
        let catchUp = CatchUpScheduler(live: live, start: at(0))
        let subject = ReplaySubject<Int>()
        for time in times where time < now { subject.sendNext(time) }
        let timeline = Timeline<Output>(clock: { catchUp.now })
        // The replay starts once the whole chain has subscribed (as it would have been live
        // from 0): its subscription waits on the virtual clock, run by `goLive`.
        let source = subject.subscribe(on: catchUp).doNext { value in catchUp.advance(to: at(value)) }
        live.performAsCurrent { _ = chain(source, catchUp).subscribe(timeline) }
        catchUp.goLive()
        #expect(catchUp.isLive)
        for time in times where time >= now {
            live.advance(to: at(time))
            live.performAsCurrent { subject.sendNext(time) }
        }
        live.advance(to: at(8_000))
        return timeline.all
    }

    @Test func bufferWithTimeGivesTheSameWindows() {
        let chain = { (signal: Signal<Int>, scheduler: any Scheduler) in
            signal.buffer(withTime: .seconds(1), on: scheduler)
        }
        let expected = Self.live(chain)
        // A window opens at its first value: the one open at the hand-over ends live.
        #expect(expected.first == "1100: [100, 200, 700]" && expected.contains("3600: [2600, 3100]"))
        #expect(Self.caughtUp(chain) == expected)
    }

    @Test func throttleDelayAndIntervalGiveTheSameValuesAtTheSameInstants() {
        let throttled = { (signal: Signal<Int>, scheduler: any Scheduler) in
            signal.throttle(.milliseconds(300), on: scheduler)
        }
        #expect(Self.caughtUp(throttled) == Self.live(throttled))
        let delayed = { (signal: Signal<Int>, scheduler: any Scheduler) in signal.delay(.seconds(1), on: scheduler) }
        let expected = Self.live(delayed)
        #expect(expected.contains("3600: 2600") && Self.caughtUp(delayed) == expected)
        let sampled = { (signal: Signal<Int>, scheduler: any Scheduler) in
            signal.sample(Signal.interval(.milliseconds(500), on: scheduler)).take(12)
        }
        #expect(Self.caughtUp(sampled) == Self.live(sampled))
    }

    @Test func workCancelledWhileCatchingUpOrAfterTheHandOverNeverRuns() {
        let live = TestScheduler(start: Self.at(1_000))
        let catchUp = CatchUpScheduler(live: live, start: .zero)
        let ran = Mutex<[String]>([])
        catchUp.after(Self.at(100)) { ran.withLock { $0.append("a") } }?.dispose()
        let handedOver = catchUp.after(Self.at(1_500)) { ran.withLock { $0.append("b") } }
        catchUp.after(Self.at(1_600)) { ran.withLock { $0.append("c") } }
        catchUp.advance(to: Self.at(500))
        catchUp.goLive()
        handedOver?.dispose()
        live.advance(to: Self.at(2_000))
        #expect(ran.withLock { $0 } == ["c"] && catchUp.now == Self.at(2_000))
    }
}
