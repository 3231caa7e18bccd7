#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A blocking TCP client on POSIX sockets, independent of libuv, for driving a server under
/// test: it sends bytes or `\n`-terminated lines and reads back lines or a number of bytes.
///
/// Thread rules: owned by one thread at a time; not thread-safe. Every read waits with `poll()`
/// up to a deadline (`defaultTimeout` unless given) and never skips a line, so tests see exact
/// ordering. A send blocks while the socket is full, for at most 10 s (`SO_SNDTIMEO`), so a
/// server that stops reading fails a test instead of hanging it. The socket is close-on-exec,
/// so a process spawned by a parallel test never inherits it; it has `TCP_NODELAY`, so each
/// send leaves when it is made; it is closed by `close()`, `resetAndClose()` or on deinit.
public final class BlockingTCPClient {
    public static let defaultTimeout: Duration = .seconds(10)
    /// The most one `recv` takes.
    private static let receiveChunk = 65_536

    /// How the peer ended its side of the connection.
    public enum StreamEnd: Sendable {
        /// An orderly close (FIN).
        case closed
        /// A reset, or any other receive error; what was already received stays readable.
        case reset
    }

    /// The socket, or -1 once closed; for socket options and sends a test makes itself.
    public private(set) var descriptor: Int32
    /// How the peer ended the stream, once it has.
    public private(set) var streamEnd: StreamEnd?
    private var buffer = LineBuffer()

    /// Connects to `host:port`, an IPv4 or IPv6 literal. `receiveBufferSize` shrinks
    /// `SO_RCVBUF` before connecting, which caps the TCP window, so that a client that does not
    /// read backs the server up quickly.
    public init(host: String = "127.0.0.1", port: Int, receiveBufferSize: Int32? = nil) throws {
        let isIPv6 = host.contains(":")
        descriptor = socket(
            isIPv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SystemCallError("socket", errno) }
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        if var size = receiveBufferSize {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var sendTimeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &sendTimeout, socklen_t(MemoryLayout<timeval>.size))
        let connected =
            isIPv6
            ? connect(to: Self.ipv6Address(host, port: port)) : connect(to: Self.ipv4Address(host, port: port))
        guard connected else {
            let error = errno
            // Every property is set, so deinit runs after the throw: it must find the socket closed.
            close()
            throw SystemCallError("connect to \(host):\(port)", error)
        }
    }

    deinit { close() }

    private static func ipv4Address(_ host: String, port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        let parsed = inet_pton(AF_INET, host, &address.sin_addr)
        precondition(parsed == 1, "not an IPv4 address: \(host)")
        return address
    }

    private static func ipv6Address(_ host: String, port: Int) -> sockaddr_in6 {
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_port = UInt16(port).bigEndian
        let parsed = inet_pton(AF_INET6, host, &address.sin6_addr)
        precondition(parsed == 1, "not an IPv6 address: \(host)")
        return address
    }

    /// Connects the socket to `address`, a `sockaddr_in` or a `sockaddr_in6`.
    private func connect<Address>(to address: Address) -> Bool {
        withUnsafePointer(to: address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<Address>.size)) == 0
            }
        }
    }

    public func close() {
        if descriptor >= 0 {
            Glibc.close(descriptor)
            descriptor = -1
        }
    }

    /// Shuts down the sending side only (a half-close, as `nc -N` does after its input).
    public func shutdownWrite() {
        if descriptor >= 0 { _ = shutdown(descriptor, Int32(SHUT_WR)) }
    }

    /// Closes with `SO_LINGER` 0, so that the server sees a reset instead of an orderly close.
    public func resetAndClose() {
        guard descriptor >= 0 else { return }
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        close()
    }

    // MARK: Sending

    /// Sends `line` followed by `\n`.
    public func send(_ line: String) throws {
        try sendRaw(Array((line + "\n").utf8))
    }

    /// Sends text exactly as given (no terminator added).
    public func sendRaw(_ text: String) throws {
        try sendRaw(Array(text.utf8))
    }

    /// Sends bytes exactly as given, all of them, blocking while the socket is full.
    public func sendRaw(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { chunk in
                Glibc.send(descriptor, chunk.baseAddress, chunk.count, Int32(MSG_NOSIGNAL))
            }
            if sent < 0 {
                if errno == EINTR { continue }
                throw SystemCallError("send", errno)
            }
            offset += sent
        }
    }

    // MARK: Receiving

    /// Whether the peer has ended the stream, by a close or a reset.
    public var isClosedByPeer: Bool { streamEnd != nil }

    /// The next line (without its terminator), or nil if none completes within `timeout` or the
    /// peer ends the stream first.
    public func readLine(timeout: Duration = BlockingTCPClient.defaultTimeout) -> String? {
        let deadline = Deadline(timeout)
        while true {
            if let line = buffer.nextLine() { return line }
            guard waitForInput(until: deadline) else { return nil }
            receiveAvailable()
        }
    }

    /// Reads every line until the peer ends the stream; nil if it has not within `timeout`.
    /// A last line without its `\n` is not returned.
    public func readUntilClosed(timeout: Duration = BlockingTCPClient.defaultTimeout) -> [String]? {
        let deadline = Deadline(timeout)
        var lines: [String] = []
        while true {
            while let line = buffer.nextLine() { lines.append(line) }
            if isClosedByPeer { return lines }
            guard waitForInput(until: deadline) else { return nil }
            receiveAvailable()
        }
    }

    /// Reads until `count` bytes have come, the peer ends the stream, or `timeout` passes, and
    /// returns what came. It takes no more than `count` bytes from the socket: the rest stays
    /// in the kernel's buffers, as it would for a peer reading just that much.
    public func readBytes(count: Int, timeout: Duration = BlockingTCPClient.defaultTimeout) -> [UInt8] {
        let deadline = Deadline(timeout)
        while buffer.count < count, waitForInput(until: deadline) {
            receive(atMost: count - buffer.count)
        }
        return buffer.removeBytes(min(count, buffer.count))
    }

    /// Reads every byte until the peer ends the stream; nil if it has not within `timeout`.
    /// `streamEnd` then says whether it closed or reset the connection.
    public func readBytesUntilClosed(timeout: Duration = BlockingTCPClient.defaultTimeout) -> [UInt8]? {
        let deadline = Deadline(timeout)
        while !isClosedByPeer {
            guard waitForInput(until: deadline) else { return nil }
            receiveAvailable()
        }
        return buffer.removeBytes(buffer.count)
    }

    /// A complete line already received, without touching the socket.
    public func bufferedLine() -> String? { buffer.nextLine() }

    /// Moves whatever the socket holds into the buffer without blocking; for a thread that
    /// `poll()`s many clients itself.
    public func receiveAvailable() {
        while receive(atMost: Self.receiveChunk) == Self.receiveChunk {}
    }

    /// Whether there is input, or the end of the stream, to receive before `deadline`; false at
    /// once when the stream has already ended or the client is closed.
    private func waitForInput(until deadline: Deadline) -> Bool {
        guard descriptor >= 0, !isClosedByPeer else { return false }
        while true {
            var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, deadline.remainingMilliseconds)
            if ready > 0 { return true }
            if ready == 0 || errno != EINTR { return false }
        }
    }

    /// One `recv` of at most `limit` bytes into the buffer, without blocking; returns how many
    /// came, 0 when none were waiting or the stream ended (which `streamEnd` then records).
    @discardableResult
    private func receive(atMost limit: Int) -> Int {
        guard descriptor >= 0, !isClosedByPeer else { return 0 }
        let size = min(limit, Self.receiveChunk)
        return withUnsafeTemporaryAllocation(byteCount: size, alignment: 1) { chunk in
            while true {
                let count = recv(descriptor, chunk.baseAddress, size, Int32(MSG_DONTWAIT))
                if count > 0 {
                    buffer.append(UnsafeRawBufferPointer(rebasing: chunk[0..<count]))
                    return count
                }
                if count == 0 {
                    streamEnd = .closed
                    return 0
                }
                switch errno {
                case EINTR: continue
                case EAGAIN, EWOULDBLOCK: return 0
                default:
                    streamEnd = .reset
                    return 0
                }
            }
        }
    }
}
