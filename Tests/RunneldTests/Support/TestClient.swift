import Foundation
import Testing

/// A blocking TCP client speaking newline-delimited lines to a server on 127.0.0.1.
///
/// Owned by one test thread; not thread-safe. Reads wait with `poll()` up to a timeout (5 s by
/// default, generous for loaded CI machines) and never skip a line, so tests see exact event
/// ordering. The socket is close-on-exec, so a daemon spawned by a parallel test never inherits
/// it, and is closed by `close()` or on deinit.
final class TestClient {
    static let defaultTimeout: Duration = .seconds(5)

    /// The socket, or -1 once closed.
    private(set) var fd: Int32
    private var buffer = LineBuffer()
    /// True once the peer has closed its side (or reset the connection).
    private(set) var isClosedByPeer = false

    /// Connects to `127.0.0.1:port`. `receiveBufferSize` shrinks `SO_RCVBUF` before connecting,
    /// which caps the TCP window so a client that does not read backs up the server quickly.
    init(port: UInt16, receiveBufferSize: Int32? = nil) throws {
        let kind = Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        fd = socket(AF_INET, kind, 0)
        guard fd >= 0 else { throw HarnessError.system("socket", errno) }
        if var size = receiveBufferSize {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        // A server that stops reading must not hang a test forever in send().
        var sendTimeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in.loopback(port: port)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let error = errno
            Glibc.close(fd)
            throw HarnessError.system("connect to port \(port)", error)
        }
    }

    deinit { close() }

    func close() {
        if fd >= 0 {
            Glibc.close(fd)
            fd = -1
        }
    }

    /// Shuts down the sending side only (a half-close, as `nc -N` does after its input).
    func shutdownWrite() {
        if fd >= 0 { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }
    }

    /// Closes with `SO_LINGER` 0, so the server sees a reset instead of an orderly close.
    func resetAndClose() {
        guard fd >= 0 else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    // MARK: Sending

    /// Sends `line` followed by `\n`.
    func send(_ line: String) throws {
        try sendRaw(Array((line + "\n").utf8))
    }

    /// Sends a request built from a JSON value, followed by `\n`.
    func send(_ request: JSON) throws {
        try send(request.text)
    }

    /// Sends text exactly as given (no terminator added).
    func sendRaw(_ text: String) throws {
        try sendRaw(Array(text.utf8))
    }

    /// Sends bytes exactly as given, all of them, blocking while the socket is full.
    func sendRaw(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { chunk in
                Glibc.send(fd, chunk.baseAddress, chunk.count, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                throw HarnessError.system("send", errno)
            }
            offset += sent
        }
    }

    // MARK: Receiving

    /// The next line (without its terminator), or nil if none completes within `timeout` or the
    /// peer closes first.
    func readLine(timeout: Duration = TestClient.defaultTimeout) -> String? {
        let deadline = Deadline(timeout)
        while true {
            if let line = buffer.nextLine() { return line }
            if isClosedByPeer || fd < 0 { return nil }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, deadline.remainingMilliseconds)
            if ready == 0 { return nil }
            if ready < 0 {
                if errno == EINTR { continue }
                return nil
            }
            receiveAvailable()
        }
    }

    /// The next line parsed as JSON; throws on timeout, close, or a line that is not JSON.
    func readJSON(timeout: Duration = TestClient.defaultTimeout) throws -> JSON {
        guard let line = readLine(timeout: timeout) else {
            if isClosedByPeer { throw HarnessError.closed("waiting for a line") }
            throw HarnessError.timeout("no line within \(timeout)")
        }
        return try JSON.parse(line)
    }

    /// Sends one request line and returns the very next line the server writes, whatever it is.
    func request(_ line: String, timeout: Duration = TestClient.defaultTimeout) throws -> JSON {
        try send(line)
        return try readJSON(timeout: timeout)
    }

    /// Sends a request built from a JSON value and returns the very next line.
    func request(_ request: JSON, timeout: Duration = TestClient.defaultTimeout) throws -> JSON {
        try send(request)
        return try readJSON(timeout: timeout)
    }

    /// Records an issue if any line arrives within `within`.
    func expectNoLine(
        within: Duration = .milliseconds(300), sourceLocation: SourceLocation = #_sourceLocation
    ) {
        let line = readLine(timeout: within)
        #expect(line == nil, "unexpected line: \(line ?? "")", sourceLocation: sourceLocation)
    }

    /// Reads every line until the peer closes; nil if it has not closed within `timeout`.
    func readUntilClosed(timeout: Duration = TestClient.defaultTimeout) -> [String]? {
        let deadline = Deadline(timeout)
        var lines: [String] = []
        while true {
            while let line = buffer.nextLine() { lines.append(line) }
            if isClosedByPeer { return lines }
            if deadline.hasPassed || fd < 0 { return nil }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&entry, 1, deadline.remainingMilliseconds) > 0 { receiveAvailable() }
        }
    }

    /// Moves whatever the socket holds into the line buffer without blocking. Used directly by
    /// `pollReadable` when one thread serves many clients.
    func receiveAvailable() {
        guard fd >= 0, !isClosedByPeer else { return }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                chunk.withUnsafeBytes { buffer.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                if count < chunk.count { return }
                continue
            }
            if count == 0 {
                isClosedByPeer = true
                return
            }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return
            default:
                // A reset ends the stream like a close; what was already buffered stays readable.
                isClosedByPeer = true
                return
            }
        }
    }

    /// A complete line already received, without touching the socket.
    func bufferedLine() -> String? { buffer.nextLine() }
}

extension sockaddr_in {
    /// `127.0.0.1:port`.
    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        return address
    }
}

/// Waits until at least one of `clients` has data (or has closed) and pulls it into their line
/// buffers; returns the indices that were ready, empty on timeout. One thread can serve
/// thousands of connections this way.
func pollReadable(_ clients: [TestClient], timeout: Duration) -> [Int] {
    var entries = clients.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
    let ready = poll(&entries, nfds_t(entries.count), Deadline(timeout).remainingMilliseconds)
    guard ready > 0 else { return [] }
    var indices: [Int] = []
    for (index, entry) in entries.enumerated() where entry.revents != 0 {
        clients[index].receiveAvailable()
        indices.append(index)
    }
    return indices
}
