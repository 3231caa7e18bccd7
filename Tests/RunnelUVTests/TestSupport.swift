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

/// Polls `condition` until it holds or `seconds` pass.
func eventually(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = DispatchTime.now() + .milliseconds(Int(seconds * 1000))
    while DispatchTime.now() < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
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

/// A blocking POSIX TCP client, independent of libuv, for driving a server under test.
final class BlockingClient: @unchecked Sendable {
    let descriptor: Int32

    init(host: String = "127.0.0.1", port: Int) throws {
        let isIPv6 = host.contains(":")
        descriptor = socket(isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ClientError.failed("socket", errno) }
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let status: Int32
        if isIPv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = UInt16(port).bigEndian
            inet_pton(AF_INET6, host, &address.sin6_addr)
            status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            inet_pton(AF_INET, host, &address.sin_addr)
            status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard status == 0 else {
            let error = errno
            Glibc.close(descriptor)
            throw ClientError.failed("connect", error)
        }
    }

    deinit { Glibc.close(descriptor) }

    enum ClientError: Error { case failed(String, Int32) }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress! + offset, bytes.count - offset, 0)
            }
            guard sent > 0 else { throw ClientError.failed("send", errno) }
            offset += sent
        }
    }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads until `count` bytes have come, the peer closes, or the receive timeout passes.
    func receive(count: Int) -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while result.count < count {
            let received = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress!, min($0.count, count - result.count), 0)
            }
            if received <= 0 { break }
            result.append(contentsOf: buffer[0..<received])
        }
        return result
    }

    /// Reads until the peer closes; returns the bytes and whether it saw the end (not a timeout).
    func receiveUntilClosed() -> (bytes: [UInt8], closed: Bool) {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let received = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress!, $0.count, 0) }
            if received == 0 { return (result, true) }
            if received < 0 { return (result, false) }
            result.append(contentsOf: buffer[0..<received])
        }
    }

    func shutdownWrite() { shutdown(descriptor, Int32(SHUT_WR)) }
}

/// A delegate that records what a connection delivers (loop thread) for the test to read.
final class RecordingDelegate: TCPConnectionDelegate, @unchecked Sendable {
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

    func connection(_ connection: TCPConnection, didReadLine line: UnsafeRawBufferPointer) {
        let onLoopScheduler = scheduler.map { currentScheduler === $0 } ?? true
        record.withLock {
            $0.lines.append(Array(line))
            if !onLoopScheduler { $0.sawLoopScheduler = false }
        }
        if echo { connection.writeLine(copying: line) }
    }

    func connection(_ connection: TCPConnection, didDiscardLongLine byteCount: Int) {
        record.withLock { $0.discarded.append(byteCount) }
    }

    func connectionDidClose(_ connection: TCPConnection) {
        record.withLock { $0.closes += 1 }
    }

    var lines: [String] { record.current.lines.map { String(decoding: $0, as: UTF8.self) } }
}

/// Counts lines; at the first one, queues a block on the loop that notes how many lines had
/// arrived by the time it ran.
final class BurstCounter: TCPConnectionDelegate, @unchecked Sendable {
    struct State {
        var lines = 0
        var blockRanAfter: Int?
    }

    let state = Shared(State())

    func connection(_ connection: TCPConnection, didReadLine line: UnsafeRawBufferPointer) {
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
