import Dispatch
import Runnel
import RunnelTestSupport
import Testing

@testable import RunnelUV

extension RunnelUVTests {
    /// The threading toolkit (docs/architecture.md, "Thread rules"): the ways across threads,
    /// each on a running loop, from real threads (run under the thread sanitizer in CI).
    @Suite struct HandOffTests {
        /// Messages posted from several threads reach the loop's thread in each thread's order;
        /// what arrives while the loop is busy is received as one batch.
        @Test func anInboxDeliversEveryThreadsMessagesInOrderInBatches() {
            let loop = EventLoop.started()
            defer { _ = loop.shutdown() }
            let scheduler = loop.scheduler
            let received = Shared<[(thread: Int, n: Int)]>([])
            let batches = Shared(0)
            let inbox = LoopInbox<(thread: Int, n: Int)>(loop: scheduler) { batch in
                precondition(scheduler.isOnLoopThread)
                batches.withLock { $0 += 1 }
                received.withLock { $0.append(contentsOf: batch) }
            }
            let threads = 4
            let count = 5_000
            // The loop is held while the threads post: everything waits in the inbox.
            let gate = DispatchSemaphore(value: 0)
            scheduler.schedule { gate.wait() }
            DispatchQueue.concurrentPerform(iterations: threads) { thread in
                for n in 0..<count { inbox.post((thread, n)) }
            }
            gate.signal()
            #expect(eventually { received.current.count == threads * count })
            let all = received.current
            for thread in 0..<threads {
                #expect(all.filter { $0.thread == thread }.map(\.n) == Array(0..<count))
            }
            #expect(batches.current == 1)
            inbox.post((0, count))
            #expect(eventually { received.current.count == threads * count + 1 })
            #expect(batches.current == 2)
        }

        /// What a turn posts leaves as one batch at the turn's end, in order, with requests
        /// `extendingLast` joins made one; `handOver` sends at once.
        @Test func anOutboxSendsATurnsMessagesAsOneBatch() {
            let loop = EventLoop.started()
            defer { _ = loop.shutdown() }
            let sent = Shared<[[String]]>([])
            let scheduler = loop.scheduler
            let outbox = Unchecked(
                LoopOutbox<String>(loop: scheduler) { batch in
                    precondition(scheduler.isOnLoopThread)
                    sent.withLock { $0.append(batch) }
                })
            let join: @Sendable (String) -> (inout String) -> Bool = { new in
                { last in
                    guard last.hasPrefix("flush") && new.hasPrefix("flush") else { return false }
                    last += "+" + new
                    return true
                }
            }
            _ = onLoop(loop) {
                outbox.value.post("a")
                outbox.value.post("flush1", extendingLast: join("flush1"))
                outbox.value.post("flush2", extendingLast: join("flush2"))
                outbox.value.post("b", extendingLast: join("b"))
                return sent.current.isEmpty
            }
            #expect(eventually { sent.current.count == 1 })
            #expect(sent.current == [["a", "flush1+flush2", "b"]])
            let handedAtOnce = onLoop(loop) {
                outbox.value.post("c")
                outbox.value.handOver()
                return sent.current.count
            }
            #expect(handedAtOnce == 2)
            #expect(sent.current.last == ["c"])
        }

        /// A run (`OutboxRun`) gathers apart and takes its place in the batch as one message:
        /// closed by a message posted after it, by a run of another key, and by the batch going.
        @Test func anOutboxRunBecomesOneMessageInItsPlace() {
            let loop = EventLoop.started()
            defer { _ = loop.shutdown() }
            let sent = Shared<[[String]]>([])
            let scheduler = loop.scheduler
            let outbox = LoopOutbox<String>(loop: scheduler) { batch in sent.withLock { $0.append(batch) } }
            let run = Unchecked(
                OutboxRun<String, String, Int>(of: outbox) { key, head, elements in
                    "\(head)\(key):" + elements.map(String.init).joined(separator: ",")
                })
            let boxed = Unchecked(outbox)
            _ = onLoop(loop) {
                run.value.start(1, "r", with: 10)
                #expect(run.value.isOpen(1) && !run.value.isOpen(2))
                run.value.append(11)
                boxed.value.post("a")
                #expect(!run.value.isOpen(1))
                run.value.start(1, "r", with: 12)
                run.value.start(2, "s", with: 20)
                run.value.append(21)
                return true
            }
            #expect(eventually { sent.current.count == 1 })
            #expect(sent.current == [["r1:10,11", "a", "r1:12", "s2:20,21"]])
            let handedAtOnce = onLoop(loop) {
                run.value.start(3, "t", with: 30)
                boxed.value.handOver()
                return sent.current.count
            }
            #expect(handedAtOnce == 2)
            #expect(sent.current.last == ["t3:30"])
        }

        /// A worker's job runs off the loop, and its answer comes back on the loop's thread, in
        /// the order the jobs were given.
        @Test func aWorkersAnswersComeBackToTheLoopInOrder() {
            let loop = EventLoop.started()
            defer { _ = loop.shutdown() }
            let scheduler = loop.scheduler
            let worker = LoopWorker(loop: scheduler, label: "test.worker")
            let answers = Shared<[Int]>([])
            let offLoop = Shared(true)
            _ = onLoop(loop) {
                for n in 0..<100 {
                    worker.run {
                        if scheduler.isOnLoopThread { offLoop.withLock { $0 = false } }
                        return n * 2
                    } then: { answer in
                        precondition(scheduler.isOnLoopThread)
                        answers.withLock { $0.append(answer) }
                    }
                }
                return true
            }
            #expect(eventually { answers.current.count == 100 })
            #expect(answers.current == (0..<100).map { $0 * 2 })
            #expect(offLoop.current)
        }

        /// A loop-bound value carries through a `@Sendable` closure to its loop; a loop-bound
        /// reference lets its object go.
        @Test func loopBoundValuesAndReferences() {
            let loop = EventLoop.started()
            defer { _ = loop.shutdown() }
            let scheduler = loop.scheduler
            let read = onLoop(loop) {
                var bound = LoopBound([1, 2], loop: scheduler)
                bound.value.append(3)
                return bound.value
            }
            #expect(read == [1, 2, 3])
            let released = onLoop(loop) {
                let reference = LoopBoundReference<Shared<Int>>(loop: scheduler)
                do {
                    let object = Shared(1)
                    reference.object = object
                    precondition(reference.object === object)
                }
                return reference.object == nil
            }
            #expect(released)
        }
    }
}

/// A value handed to the loop thread by a test that knows only that thread touches it.
private struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
