import Runnel
import RunnelBytes
import RunnelTestSupport
import RunnelUV
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

extension RunnelUVTests {
    @Suite struct LoopLifecycleTests {
        @Test func shuttingDownWithOpenConnectionsTimersAndSignalsLeaksNothing() throws {
            weak var weakLoop: EventLoop?
            weak var weakScheduler: LoopScheduler?
            weak var weakListener: TCPListener?
            let weakConnections = Shared<[WeakBox<TCPConnection>]>([])
            let hookRuns = Shared(0)
            let closes = Shared(0)
            var status: Int32?
            var owners = -1
            do {
                let loop = EventLoop.started()
                let scheduler = loop.scheduler
                weakLoop = loop
                weakScheduler = scheduler
                var listener: TCPListener? = try TCPListener.bind(host: "127.0.0.1", port: 0, on: loop)
                weakListener = listener
                listener!.onAccept = { connection in
                    weakConnections.withLock { $0.append(WeakBox(connection)) }
                    connection.onClose { hookRuns.withLock { $0 += 1 } }
                    let delegate = CountingCloses(closes)
                    connection.readLines(into: delegate)
                    connection.startReading()
                    // Queue output the peer never reads.
                    connection.write(ByteBuffer(count: 8 << 20) { $0.initializeMemory(as: UInt8.self, repeating: 1) })
                }
                let clients = try (0..<3).map { _ in try BlockingTCPClient(port: listener!.port) }
                #expect(eventually { weakConnections.current.count == 3 })
                var timers: [Disposable?] = []
                for index in 0..<5 { timers.append(scheduler.after(delay: .seconds(60 + index)) {}) }
                timers.append(scheduler.after(scheduler.now, repeatingEvery: .seconds(1)) {})
                let signals = scheduler.performAsCurrent { loop.signals([SIGHUP]).subscribeNext { _ in } }
                #expect(eventually { scheduler.armedTimerCount == 6 })
                status = loop.shutdown()
                #expect(scheduler.armedTimerCount == 0)
                timers.removeAll()
                signals.dispose()
                listener = nil
                withExtendedLifetime(clients) {}
                owners = scheduler.liveHandleOwners
            }
            #expect(status == 0)
            #expect(owners == 0)
            #expect(hookRuns.current == 3)
            #expect(closes.current == 3)
            #expect(weakConnections.current.allSatisfy { $0.value == nil })
            #expect(weakListener == nil)
            #expect(weakScheduler == nil)
            #expect(weakLoop == nil)
        }

        @Test func aLoopRunOnTheCallersThreadStopsWhenShutDownFromInside() {
            let loop = EventLoop()
            let ran = Shared(false)
            loop.scheduler.after(delay: .milliseconds(5)) {
                ran.withLock { $0 = true }
                #expect(loop.shutdown() == nil)  // on the loop thread: only begins
            }
            #expect(loop.run() == 0)
            #expect(ran.current)
            #expect(loop.closeStatus == 0)
        }

        @Test func aLoopThatNeverRanClosesCleanly() {
            weak var weakScheduler: LoopScheduler?
            do {
                let loop = EventLoop()
                weakScheduler = loop.scheduler
                loop.scheduler.schedule {}
            }
            #expect(weakScheduler == nil)
        }
    }
}

/// A weak reference that can sit in an array.
struct WeakBox<Object: AnyObject>: @unchecked Sendable {
    weak var value: Object?
    init(_ value: Object) { self.value = value }
}

/// Counts `connectionDidClose` calls.
final class CountingCloses: LineReaderDelegate {
    let closes: Shared<Int>
    init(_ closes: Shared<Int>) { self.closes = closes }
    func connection(_ connection: any ByteStream, didReadLine line: UnsafeRawBufferPointer) {}
    func connectionDidClose(_ connection: any ByteStream) { closes.withLock { $0 += 1 } }
}
