import Runnel
import RunnelUV
import Testing

// Enable by renaming to `.swift` once `delay(_:on:)`, `throttle(_:on:)`, `timeout(_:on:)` and
// `buffer(withTime:on:)` are on the branch. These are the deliberate real-clock tests: the
// operators' logic is tested on `TestScheduler`; here they run on a libuv loop with real
// timers, and the checks allow generous lateness (the machine is shared and noisy) but no
// earliness.

extension RunnelUVTests {
    @Suite struct RealClockTimeOperatorTests {
        /// Lateness allowed on this shared machine.
        static let slack = Duration.milliseconds(250)

        /// Events with their arrival times on the loop's clock.
        final class Timeline<Value: Sendable>: @unchecked Sendable {
            let events = Shared<[(SchedulerTime, Event<Value>)]>([])
            let finished = Waiter()

            func subscriber(_ scheduler: LoopScheduler) -> (
                next: @Sendable (Value) -> Void, error: @Sendable (any Error) -> Void, completed: @Sendable () -> Void
            ) {
                (
                    next: { value in self.events.withLock { $0.append((scheduler.now, .next(value))) } },
                    error: { error in
                        self.events.withLock { $0.append((scheduler.now, .error(error))) }
                        self.finished.signal()
                    },
                    completed: {
                        self.events.withLock { $0.append((scheduler.now, .completed)) }
                        self.finished.signal()
                    }
                )
            }

            var values: [Value] {
                events.current.compactMap { if case .next(let value) = $0.1 { return value } else { return nil } }
            }
            func times(ofValuesWhere match: (Value) -> Bool) -> [SchedulerTime] {
                events.current.compactMap {
                    if case .next(let value) = $0.1, match(value) { return $0.0 } else { return nil }
                }
            }
            var terminalTime: SchedulerTime? { events.current.last.map { $0.0 } }
        }

        /// Subscribes `make(subject)` on the loop, then sends `script` (offset, value) from loop
        /// timers and completes after `completeAfter`. Returns the start time.
        func run<Value: Sendable, Output: Sendable>(
            on loop: EventLoop, script: [(Int, Value)], completeAfter: Int?,
            _ make: @escaping @Sendable (Signal<Value>) -> Signal<Output>, into timeline: Timeline<Output>
        ) -> SchedulerTime {
            let scheduler = loop.scheduler
            return onLoop(loop) {
                let subject = Subject<Value>()
                let blocks = timeline.subscriber(scheduler)
                make(subject).subscribe(next: blocks.next, error: blocks.error, completed: blocks.completed)
                let start = scheduler.now
                for (offset, value) in script {
                    scheduler.after(start.advanced(by: .milliseconds(offset))) { subject.sendNext(value) }
                }
                if let completeAfter {
                    scheduler.after(start.advanced(by: .milliseconds(completeAfter))) { subject.sendCompleted() }
                }
                return start
            }
        }

        @Test func delayShiftsValuesAndCompletionByTheInterval() {
            let loop = EventLoop.started()
            let timeline = Timeline<Int>()
            let interval = Duration.milliseconds(60)
            let start = run(
                on: loop, script: [(0, 1), (20, 2)], completeAfter: 40, { $0.delay(interval, on: loop.scheduler) },
                into: timeline)
            #expect(timeline.finished.wait())
            #expect(timeline.values == [1, 2])
            let one = timeline.times { $0 == 1 }[0]
            let two = timeline.times { $0 == 2 }[0]
            #expect(one >= start.advanced(by: interval))
            #expect(one <= start.advanced(by: interval + Self.slack))
            #expect(two >= start.advanced(by: .milliseconds(20) + interval))
            #expect(timeline.terminalTime! >= start.advanced(by: .milliseconds(40) + interval))
            #expect(loop.shutdown() == 0)
        }

        @Test func throttleSendsTheLastValueOfABurstAfterAQuietInterval() {
            let loop = EventLoop.started()
            let timeline = Timeline<Int>()
            let interval = Duration.milliseconds(80)
            let start = run(
                on: loop, script: [(0, 1), (10, 2), (20, 3), (400, 4)], completeAfter: 700,
                { $0.throttle(interval, on: loop.scheduler) }, into: timeline)
            #expect(timeline.finished.wait())
            #expect(timeline.values == [3, 4])
            let three = timeline.times { $0 == 3 }[0]
            #expect(three >= start.advanced(by: .milliseconds(20) + interval))
            #expect(three <= start.advanced(by: .milliseconds(20) + interval + Self.slack))
            let four = timeline.times { $0 == 4 }[0]
            #expect(four >= start.advanced(by: .milliseconds(400) + interval))
            #expect(loop.shutdown() == 0)
        }

        @Test func timeoutFailsASilentSourceAndSparesAPromptOne() {
            let loop = EventLoop.started()
            let silent = Timeline<Int>()
            let interval = Duration.milliseconds(50)
            let start = run(
                on: loop, script: [], completeAfter: nil, { $0.timeout(interval, on: loop.scheduler) }, into: silent)
            #expect(silent.finished.wait())
            guard case .error(let error)? = silent.events.current.last?.1 else {
                Issue.record("expected a timeout error, got \(silent.events.current)")
                return
            }
            #expect(error as? RunnelError == .timedOut)
            #expect(silent.terminalTime! >= start.advanced(by: interval))
            #expect(silent.terminalTime! <= start.advanced(by: interval + Self.slack))

            let prompt = Timeline<Int>()
            _ = run(
                on: loop, script: [(0, 7)], completeAfter: 10, { $0.timeout(.milliseconds(500), on: loop.scheduler) },
                into: prompt)
            #expect(prompt.finished.wait())
            #expect(prompt.values == [7])
            guard case .completed? = prompt.events.current.last?.1 else {
                Issue.record("expected completion, got \(prompt.events.current)")
                return
            }
            #expect(loop.shutdown() == 0)
        }

        @Test func bufferWithTimeGroupsValuesByWindow() {
            let loop = EventLoop.started()
            let timeline = Timeline<[Int]>()
            let interval = Duration.milliseconds(60)
            let start = run(
                on: loop, script: [(0, 1), (5, 2), (10, 3), (300, 4)], completeAfter: 600,
                { $0.buffer(withTime: interval, on: loop.scheduler) }, into: timeline)
            #expect(timeline.finished.wait())
            #expect(timeline.values.filter { !$0.isEmpty } == [[1, 2, 3], [4]])
            let first = timeline.times { $0 == [1, 2, 3] }[0]
            #expect(first >= start.advanced(by: interval))
            #expect(first <= start.advanced(by: interval + Self.slack))
            #expect(loop.shutdown() == 0)
        }
    }
}
