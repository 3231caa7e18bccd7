import Dispatch
import RunnelTestSupport
import Synchronization
import Testing

@testable import Runnel

@Suite struct SubjectTests {
    @Test(arguments: SubjectThreading.allCases) func plainSubjectSendsOnlyLaterEvents(threading: SubjectThreading) {
        let subject = Subject<Int>(threading: threading)
        let early = Recorder<Int>()
        let late = Recorder<Int>()
        inline {
            subject.sendNext(0)
            subject.subscribe(early)
            subject.sendNext(1)
            subject.subscribe(late)
            subject.sendNext(2)
            subject.sendCompleted()
            subject.sendNext(3)
        }
        #expect(early.eventDescriptions == ["next(1)", "next(2)", "completed"])
        #expect(late.eventDescriptions == ["next(2)", "completed"])
        #expect(subject.subscriberCount == 0)
    }

    @Test(arguments: SubjectThreading.allCases) func lateSubscriberGetsTheTerminalEvent(threading: SubjectThreading) {
        let completed = Subject<Int>(threading: threading)
        let failed = Subject<Int>(threading: threading)
        completed.sendCompleted()
        failed.sendError(TestError(4))
        let afterCompletion = Recorder<Int>()
        let afterError = Recorder<Int>()
        inline {
            completed.subscribe(afterCompletion)
            failed.subscribe(afterError)
        }
        #expect(afterCompletion.eventDescriptions == ["completed"])
        #expect(afterError.eventDescriptions == ["error(TestError(4))"])
        #expect(completed.isTerminated)
    }

    @Test(arguments: SubjectThreading.allCases) func disposedSubscriberIsRemoved(threading: SubjectThreading) {
        let subject = Subject<Int>(threading: threading)
        let recorder = Recorder<Int>()
        let subscription = inline { subject.subscribe(recorder) }
        subject.sendNext(1)
        #expect(subject.subscriberCount == 1)
        subscription.dispose()
        #expect(subject.subscriberCount == 0)
        subject.sendNext(2)
        #expect(recorder.eventDescriptions == ["next(1)"])
    }

    /// Subscriptions ended while a value fans out (a publish that ends thousands of them) are
    /// taken out together when the delivery ends: they count as gone at once, receive nothing
    /// more, and are released; the others keep their order.
    @Test(arguments: SubjectThreading.allCases) func subscriptionsEndedDuringDeliveryLeaveTogetherAfterIt(
        threading: SubjectThreading
    ) {
        let subject = Subject<Int>(threading: threading)
        var enders: [Weak<EndingSubscriber>] = []
        var stayers: [Recorder<Int>] = []
        let counts = Mutex<[Int]>([])
        let counter = CountingSubscriber { _ in counts.withLock { $0.append(subject.subscriberCount) } }
        inline {
            for index in 0..<100 {
                if index.isMultiple(of: 2) {
                    let recorder = Recorder<Int>()
                    stayers.append(recorder)
                    subject.subscribe(recorder)
                } else {
                    let ender = EndingSubscriber()
                    enders.append(Weak(ender))
                    subject.subscribe(ender)
                }
            }
            subject.subscribe(counter)
            subject.sendNext(1)
            #expect(subject.subscriberCount == 51)
            subject.sendNext(2)
        }
        // Seen from inside the first delivery, after every ender had ended.
        #expect(counts.withLock { $0 } == [51, 51])
        #expect(enders.allSatisfy { $0.value == nil })
        #expect(stayers.allSatisfy { $0.eventDescriptions == ["next(1)", "next(2)"] })
    }

    @Test(arguments: SubjectThreading.allCases) func replaySubjectReplaysThenTerminates(threading: SubjectThreading) {
        let subject = ReplaySubject<Int>(threading: threading)
        subject.sendNext(1)
        subject.sendNext(2)
        let before = Recorder<Int>()
        inline { subject.subscribe(before) }
        subject.sendNext(3)
        subject.sendCompleted()
        let after = Recorder<Int>()
        inline { subject.subscribe(after) }
        #expect(before.eventDescriptions == ["next(1)", "next(2)", "next(3)", "completed"])
        #expect(after.eventDescriptions == ["next(1)", "next(2)", "next(3)", "completed"])
    }

    @Test(arguments: SubjectThreading.allCases) func replaySubjectKeepsItsCapacity(threading: SubjectThreading) {
        let subject = ReplaySubject<Int>(capacity: 2, threading: threading)
        for i in 1...5 { subject.sendNext(i) }
        subject.sendError(TestError(2))
        let recorder = Recorder<Int>()
        inline { subject.subscribe(recorder) }
        #expect(recorder.eventDescriptions == ["next(4)", "next(5)", "error(TestError(2))"])
        #expect(subject.replayedValues == [4, 5])
    }

    /// Bounded by weight as well as by count: the oldest values go until the rest fit, the
    /// newest stays whatever it weighs, and `retainedWeight` follows both kinds of eviction.
    @Test(arguments: SubjectThreading.allCases) func replaySubjectKeepsWhatFitsItsMaxWeight(threading: SubjectThreading)
    {
        let subject = ReplaySubject<Int>(capacity: 4, maxWeight: 10, weight: { $0 }, threading: threading)
        for value in [3, 3, 3] { subject.sendNext(value) }
        #expect(subject.replayedValues == [3, 3, 3])
        #expect(subject.retainedWeight == 9)
        subject.sendNext(4)  // 13 > 10: the first 3 goes
        #expect(subject.replayedValues == [3, 3, 4])
        #expect(subject.retainedWeight == 10)
        for value in [1, 1, 1] { subject.sendNext(value) }  // the count evicts 3, 3 and then 4
        #expect(subject.replayedValues == [4, 1, 1, 1])
        #expect(subject.retainedWeight == 7)
        subject.sendNext(50)  // heavier than the bound alone: kept, and nothing else
        #expect(subject.replayedValues == [50])
        #expect(subject.retainedWeight == 50)
        let recorder = Recorder<Int>()
        inline { subject.subscribe(recorder) }
        #expect(recorder.eventDescriptions == ["next(50)"])
    }

    @Test(arguments: SubjectThreading.allCases) func restoredReplaySubjectIsTrimmedToItsMaxWeight(
        threading: SubjectThreading
    ) {
        let subject = ReplaySubject<Int>(
            capacity: 10, retaining: [5, 5, 5, 2], maxWeight: 8, weight: { $0 }, threading: threading)
        #expect(subject.replayedValues == [5, 2])
        #expect(subject.retainedWeight == 7)
        let behavior = BehaviorSubject(6, weight: { $0 }, threading: threading)
        #expect(behavior.retainedWeight == 6)
        behavior.sendNext(2)
        #expect(behavior.retainedWeight == 2)
    }

    @Test(arguments: SubjectThreading.allCases) func behaviorSubjectSendsCurrentValue(threading: SubjectThreading) {
        let subject = BehaviorSubject(10, threading: threading)
        let first = Recorder<Int>()
        inline { subject.subscribe(first) }
        subject.sendNext(11)
        #expect(subject.value == 11)
        let second = Recorder<Int>()
        inline { subject.subscribe(second) }
        subject.sendCompleted()
        let late = Recorder<Int>()
        inline { subject.subscribe(late) }
        #expect(first.eventDescriptions == ["next(10)", "next(11)", "completed"])
        #expect(second.eventDescriptions == ["next(11)", "completed"])
        #expect(late.eventDescriptions == ["next(11)", "completed"])
    }

    @Test(arguments: SubjectThreading.allCases) func reentrantSendIsQueuedNotDeadlocked(threading: SubjectThreading) {
        let subject = Subject<Int>(threading: threading)
        let feeder = Recorder<Int>()
        inline {
            subject.subscribe(next: { value in
                if value < 3 { subject.sendNext(value + 1) }
            })
            subject.subscribe(feeder)
        }
        subject.sendNext(1)
        // Every subscriber sees 1 before 2: the re-entrant send waits for the current event.
        #expect(feeder.values == [1, 2, 3])
        subject.sendCompleted()  // releases the subscriber that captures the subject
    }

    @Test(arguments: SubjectThreading.allCases) func reentrantSubscribeDuringDelivery(threading: SubjectThreading) {
        let subject = ReplaySubject<Int>(threading: threading)
        let inner = Recorder<Int>()
        inline {
            subject.subscribe(next: { value in
                if value == 2 { subject.subscribe(inner) }
            })
        }
        subject.sendNext(1)
        subject.sendNext(2)
        subject.sendNext(3)
        #expect(inner.values == [1, 2, 3])
        subject.sendCompleted()
    }

    /// Subscribers joining during a delivery, enough to move the list of subscribers while it
    /// is being read: those listed before get the value once each, in order, and those
    /// joining get only later values.
    @Test(arguments: SubjectThreading.allCases) func manySubscribersJoiningDuringDelivery(threading: SubjectThreading) {
        let subject = Subject<Int>(threading: threading)
        let order = Mutex<[String]>([])
        let joined = Mutex<[Recorder<Int>]>([])
        inline {
            subject.subscribe(next: { value in
                order.withLock { $0.append("first \(value)") }
                guard value == 1 else { return }
                for _ in 0..<200 {
                    let recorder = Recorder<Int>()
                    joined.withLock { $0.append(recorder) }
                    subject.subscribe(recorder)
                }
            })
            subject.subscribe(next: { value in order.withLock { $0.append("second \(value)") } })
            subject.subscribe(next: { value in order.withLock { $0.append("third \(value)") } })
        }
        subject.sendNext(1)
        subject.sendNext(2)
        #expect(order.withLock { $0 } == ["first 1", "second 1", "third 1", "first 2", "second 2", "third 2"])
        #expect(joined.withLock { $0.count } == 200)
        #expect(joined.withLock { $0.allSatisfy { $0.values == [2] } })
        #expect(subject.subscriberCount == 203)
    }

    /// Senders on several threads, with subscribers joining midway: what each subscriber
    /// sees is exactly the recorded order, replay and live together.
    @Test func replayThenLiveKeepsRecordedOrder() {
        let subject = ReplaySubject<Int>()
        let early = Recorder<Int>()
        inline { subject.subscribe(early) }
        let lateRecorders = (0..<4).map { _ in Recorder<Int>() }
        let group = DispatchGroup()
        for sender in 0..<4 {
            DispatchQueue.global().async(group: group) {
                for i in 0..<2_000 {
                    subject.sendNext(sender * 10_000 + i)
                    if i == 400 * (sender + 1) {
                        inline { subject.subscribe(lateRecorders[sender]) }
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

/// Ends its own subscription on the first value it receives.
private final class EndingSubscriber: Subscriber, @unchecked Sendable {
    private var subscription: CompoundDisposable?
    func sendNext(_ value: Int) { subscription?.dispose() }
    func sendError(_ error: any Error) {}
    func sendCompleted() {}
    func didSubscribe(with disposable: CompoundDisposable) { subscription = disposable }
}

/// Calls `body` with each value.
private final class CountingSubscriber: Subscriber, @unchecked Sendable {
    private let body: @Sendable (Int) -> Void
    init(_ body: @escaping @Sendable (Int) -> Void) { self.body = body }
    func sendNext(_ value: Int) { body(value) }
    func sendError(_ error: any Error) {}
    func sendCompleted() {}
    func didSubscribe(with disposable: CompoundDisposable) {}
}

/// A weak reference, to see that a subscriber was released.
private struct Weak<Object: AnyObject> {
    weak var value: Object?
    init(_ value: Object) { self.value = value }
}
