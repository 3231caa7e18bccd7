import Dispatch
import Runnel
import RunnelUV
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Every RunnelUV test, run one at a time: they share the process's signal handlers, ports and
/// CPU, and timing tests must not compete with a 400,000-block flood.
@Suite(.serialized) enum RunnelUVTests {}

/// A value shared between the test thread and the loop thread, behind a lock.
final class Shared<Value>: @unchecked Sendable {
    private let lock = Lock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }

    var current: Value { withLock { $0 } }
}

/// Waits for something to be signalled, with a time limit (so a failing test fails, not hangs).
final class Waiter: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)

    func signal() { semaphore.signal() }

    /// Whether it was signalled within `seconds`.
    func wait(seconds: Double = 10) -> Bool {
        semaphore.wait(timeout: .now() + .milliseconds(Int(seconds * 1000))) == .success
    }
}

/// Runs `body` on the loop thread and waits for its result.
func onLoop<T: Sendable>(_ loop: EventLoop, _ body: @escaping @Sendable () -> T) -> T {
    let result = Shared<T?>(nil)
    let done = Waiter()
    loop.scheduler.schedule {
        let value = body()
        result.withLock { $0 = value }
        done.signal()
    }
    precondition(done.wait(), "the loop did not run the block")
    return result.current!
}

/// A delegate that records what a connection delivers (loop thread) for the test to read.
final class RecordingDelegate: LineReaderDelegate, @unchecked Sendable {
    struct Record {
        var lines: [[UInt8]] = []
        var discarded: [Int] = []
        var closes = 0
        var sawLoopScheduler = true
    }

    let record = Shared(Record())
    let echo: Bool
    weak var scheduler: LoopScheduler?

    init(echo: Bool = false, scheduler: LoopScheduler? = nil) {
        self.echo = echo
        self.scheduler = scheduler
    }

    func connection(_ connection: any ByteStream, didReadLine line: UnsafeRawBufferPointer) {
        let onLoopScheduler = scheduler.map { currentScheduler === $0 } ?? true
        record.withLock {
            $0.lines.append(Array(line))
            if !onLoopScheduler { $0.sawLoopScheduler = false }
        }
        if echo { connection.writeLine(copying: line) }
    }

    func connection(_ connection: any ByteStream, didDiscardLongLine byteCount: Int) {
        record.withLock { $0.discarded.append(byteCount) }
    }

    func connectionDidClose(_ connection: any ByteStream) {
        record.withLock { $0.closes += 1 }
    }

    var lines: [String] { record.current.lines.map { String(decoding: $0, as: UTF8.self) } }
}

/// Counts lines; at the first one, queues a block on the loop that notes how many lines had
/// arrived by the time it ran.
final class BurstCounter: LineReaderDelegate, @unchecked Sendable {
    struct State {
        var lines = 0
        var blockRanAfter: Int?
    }

    let state = Shared(State())

    func connection(_ connection: any ByteStream, didReadLine line: UnsafeRawBufferPointer) {
        let first = state.withLock { state -> Bool in
            state.lines += 1
            return state.lines == 1
        }
        guard first else { return }
        let state = self.state
        currentScheduler!.schedule {
            state.withLock { $0.blockRanAfter = $0.lines }
        }
    }
}

/// The descriptor, in this process, of the other end of the loopback connection `descriptor`
/// (a server under test runs in the test process): the socket whose local and peer ports are
/// `descriptor`'s peer and local ports.
func peerDescriptor(of descriptor: Int32) -> Int32? {
    func port(
        _ descriptor: Int32, _ get: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
    ) -> UInt16? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let status = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { get(descriptor, $0, &length) }
        }
        return status == 0 && address.sin_family == sa_family_t(AF_INET) ? UInt16(bigEndian: address.sin_port) : nil
    }
    guard let local = port(descriptor, getsockname), let peer = port(descriptor, getpeername) else { return nil }
    for candidate in Int32(3)..<Int32(4096) where candidate != descriptor {
        if port(candidate, getsockname) == peer && port(candidate, getpeername) == local { return candidate }
    }
    return nil
}
