import Dispatch
import Synchronization
import Testing

@testable import Runnel

@Suite struct SubjectTests {
    @Test func plainSubjectSendsOnlyLaterEvents() {
        let subject = Subject<Int>()
        let early = EventLog<Int>()
        let late = EventLog<Int>()
        inline {
            subject.sendNext(0)
            early.subscribe(to: subject)
            subject.sendNext(1)
            late.subscribe(to: subject)
            subject.sendNext(2)
            subject.sendCompleted()
            subject.sendNext(3)
        }
        #expect(early.events == ["next(1)", "next(2)", "completed"])
        #expect(late.events == ["next(2)", "completed"])
        #expect(subject.subscriberCount == 0)
    }

    @Test func lateSubscriberGetsTheTerminalEvent() {
        let completed = Subject<Int>()
        let failed = Subject<Int>()
        completed.sendCompleted()
        failed.sendError(TestError(4))
        let afterCompletion = EventLog<Int>()
        let afterError = EventLog<Int>()
        inline {
            afterCompletion.subscribe(to: completed)
            afterError.subscribe(to: failed)
        }
        #expect(afterCompletion.events == ["completed"])
        #expect(afterError.events == ["error(TestError(4))"])
        #expect(completed.isTerminated)
    }

    @Test func disposedSubscriberIsRemoved() {
        let subject = Subject<Int>()
        let recorder = EventLog<Int>()
        let subscription = inline { recorder.subscribe(to: subject) }
        subject.sendNext(1)
        #expect(subject.subscriberCount == 1)
        subscription.dispose()
        #expect(subject.subscriberCount == 0)
        subject.sendNext(2)
        #expect(recorder.events == ["next(1)"])
    }

    @Test func replaySubjectReplaysThenTerminates() {
        let subject = ReplaySubject<Int>()
        subject.sendNext(1)
        subject.sendNext(2)
        let before = EventLog<Int>()
        inline { before.subscribe(to: subject) }
        subject.sendNext(3)
        subject.sendCompleted()
        let after = EventLog<Int>()
        inline { after.subscribe(to: subject) }
        #expect(before.events == ["next(1)", "next(2)", "next(3)", "completed"])
        #expect(after.events == ["next(1)", "next(2)", "next(3)", "completed"])
    }

    @Test func replaySubjectKeepsItsCapacity() {
        let subject = ReplaySubject<Int>(capacity: 2)
        for i in 1...5 { subject.sendNext(i) }
        subject.sendError(TestError(2))
        let recorder = EventLog<Int>()
        inline { recorder.subscribe(to: subject) }
        #expect(recorder.events == ["next(4)", "next(5)", "error(TestError(2))"])
        #expect(subject.replayedValues == [4, 5])
    }

    @Test func behaviorSubjectSendsCurrentValue() {
        let subject = BehaviorSubject(10)
        let first = EventLog<Int>()
        inline { first.subscribe(to: subject) }
        subject.sendNext(11)
        #expect(subject.value == 11)
        let second = EventLog<Int>()
        inline { second.subscribe(to: subject) }
        subject.sendCompleted()
        let late = EventLog<Int>()
        inline { late.subscribe(to: subject) }
        #expect(first.events == ["next(10)", "next(11)", "completed"])
        #expect(second.events == ["next(11)", "completed"])
        #expect(late.events == ["next(11)", "completed"])
    }

    @Test func reentrantSendIsQueuedNotDeadlocked() {
        let subject = Subject<Int>()
        let feeder = EventLog<Int>()
        inline {
            subject.subscribe(next: { value in
                if value < 3 { subject.sendNext(value + 1) }
            })
            feeder.subscribe(to: subject)
        }
        subject.sendNext(1)
        // Every subscriber sees 1 before 2: the re-entrant send waits for the current event.
        #expect(feeder.values == [1, 2, 3])
        subject.sendCompleted()  // releases the subscriber that captures the subject
    }

    @Test func reentrantSubscribeDuringDelivery() {
        let subject = ReplaySubject<Int>()
        let inner = EventLog<Int>()
        inline {
            subject.subscribe(next: { value in
                if value == 2 { inner.subscribe(to: subject) }
            })
        }
        subject.sendNext(1)
        subject.sendNext(2)
        subject.sendNext(3)
        #expect(inner.values == [1, 2, 3])
        subject.sendCompleted()
    }

    /// Senders on several threads, with subscribers joining midway: what each subscriber
    /// sees is exactly the recorded order, replay and live together.
    @Test func replayThenLiveKeepsRecordedOrder() {
        let subject = ReplaySubject<Int>()
        let early = EventLog<Int>()
        inline { early.subscribe(to: subject) }
        let lateRecorders = (0..<4).map { _ in EventLog<Int>() }
        let group = DispatchGroup()
        for sender in 0..<4 {
            DispatchQueue.global().async(group: group) {
                for i in 0..<2_000 {
                    subject.sendNext(sender * 10_000 + i)
                    if i == 400 * (sender + 1) {
                        inline { lateRecorders[sender].subscribe(to: subject) }
                    }
                }
            }
        }
        group.wait()
        subject.sendCompleted()
        let recorded = subject.replayedValues
        #expect(recorded.count == 8_000)
        #expect(early.values.count == recorded.count)
        let earlyMatches = early.values == recorded
        #expect(earlyMatches, "early subscriber saw another order")
        for recorder in lateRecorders {
            #expect(recorder.values.count == recorded.count)
            let matches = recorder.values == recorded
            #expect(matches, "late subscriber saw another order")
        }
    }

    /// Eight threads send into one subject while subscribers keep joining and disposing: no
    /// crash, no event after a dispose returns, each sender's values in order.
    @Test func concurrentSendersWithSubscriberChurn() {
        let subject = Subject<Int>()
        let senders = 8
        let perSender = 3_000
        let violations = Atomic<Int>(0)
        let lateEvents = Atomic<Int>(0)

        /// Checks per-sender order for one subscriber.
        final class OrderCheck: @unchecked Sendable {
            let lock = Lock()
            var last = [Int](repeating: -1, count: 8)
            var count = 0
            func see(_ value: Int) -> Bool {
                lock.withLock {
                    let sender = value / 1_000_000
                    let sequence = value % 1_000_000
                    defer {
                        last[sender] = sequence
                        count += 1
                    }
                    return sequence > last[sender]
                }
            }
        }

        let steady = OrderCheck()
        inline {
            subject.subscribeNext { value in
                if !steady.see(value) { violations.add(1, ordering: .relaxed) }
            }
        }

        let sendersDone = Atomic<Int>(0)
        let group = DispatchGroup()
        for sender in 0..<senders {
            DispatchQueue(label: "sender.\(sender)").async(group: group) {
                for i in 0..<perSender { subject.sendNext(sender * 1_000_000 + i) }
                sendersDone.add(1, ordering: .releasing)
            }
        }
        DispatchQueue(label: "churn").async(group: group) {
            var rounds = 0
            while sendersDone.load(ordering: .acquiring) < senders || rounds < 10 {
                rounds += 1
                let check = OrderCheck()
                let disposed = Atomic<Bool>(false)
                let subscription = inline {
                    subject.subscribeNext { value in
                        if disposed.load(ordering: .acquiring) { lateEvents.add(1, ordering: .relaxed) }
                        if !check.see(value) { violations.add(1, ordering: .relaxed) }
                    }
                }
                for _ in 0..<50 where sendersDone.load(ordering: .relaxed) < senders { sched_yield_() }
                subscription.dispose()
                disposed.store(true, ordering: .releasing)
            }
        }
        group.wait()
        #expect(violations.load(ordering: .relaxed) == 0)
        #expect(lateEvents.load(ordering: .relaxed) == 0)
        #expect(steady.count == senders * perSender)
        #expect(subject.subscriberCount == 1)
    }
}

#if canImport(Glibc)
    import Glibc
    func sched_yield_() { sched_yield() }
#else
    import Darwin
    func sched_yield_() { sched_yield() }
#endif
