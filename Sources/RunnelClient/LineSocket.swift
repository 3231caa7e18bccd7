import Glibc
import RunnelTLS
import Synchronization

/// A blocking TCP connection to `runneld` that sends bytes and hands back whole lines: what
/// `RunnelClient`'s reader thread and the `runnel` CLI both read and write.
///
/// Connecting tries every address `getaddrinfo` returns, each bounded by the timeout (a
/// non-blocking `connect` finished with `poll`). Reads go through `poll` with a timeout so
/// callers can wake up for signals and deadlines; `recv` fills a buffer from which complete
/// lines (without `\n` or a trailing `\r`) are taken. Sends use `MSG_NOSIGNAL`. With TLS
/// options, a TLS handshake follows the connect and every byte goes through `TLSSocketClient`.
///
/// Thread rules: one thread reads (`receive`, `withNextLine`, `bufferedLine`); `send` may be
/// called from any thread (whole sends are serialised by `ioLock`, so lines never interleave,
/// and with TLS every read takes that lock too: an `SSL` is for one thread at a time);
/// `shutdown` from any thread, to wake the reader. Lifetime rule: the socket is closed on
/// deinit, after the last reference (the reader's) is gone.
package final class LineSocket: @unchecked Sendable {
    /// `HOST:PORT` (`[HOST]:PORT` for IPv6), for messages.
    package let address: String
    private let fd: Int32
    /// The TLS session, when connected with TLS.
    private let tls: TLSSocketClient?
    private var buffer: [UInt8] = []
    /// Where unread bytes start in `buffer`.
    private var readStart = 0
    /// Where the scan for the next `\n` resumes.
    private var scanStart = 0
    /// Where `recv` writes; its bytes are then appended to `buffer`.
    private let chunk: UnsafeMutableRawBufferPointer
    private let ioLock = Mutex(())

    package init(host: String, port: UInt16, timeoutMilliseconds: Int32, tls settings: TLSSettings? = nil)
        throws(RunnelError)
    {
        let address = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        self.address = address
        let fd = try LineSocket.open(host: host, port: port, address, timeoutMilliseconds: timeoutMilliseconds)
        if let settings {
            LineSocket.ignoreBrokenPipes()
            do {
                tls = try TLSSocketClient(
                    fd: fd, context: try settings.makeContext(), serverName: settings.serverName ?? host,
                    timeoutMilliseconds: timeoutMilliseconds)
            } catch {
                Glibc.close(fd)
                throw .connectionLost("TLS with \(address): \(error)")
            }
        } else {
            tls = nil
        }
        self.fd = fd
        chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 1)
        buffer.reserveCapacity(128 * 1024)
    }

    deinit {
        tls?.shutdown()
        Glibc.close(fd)
        chunk.deallocate()
    }

    // MARK: Sending

    /// Sends every byte, blocking while the socket is full.
    package func send(_ bytes: UnsafeRawBufferPointer) throws(RunnelError) {
        let failure = ioLock.withLock { _ -> RunnelError? in
            if let tls {
                do {
                    try tls.write(bytes)
                } catch {
                    return .connectionLost("lost connection to \(address): \(error)")
                }
                return nil
            }
            var offset = 0
            while offset < bytes.count {
                let sent = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0 {
                    if errno == EINTR { continue }
                    return .connectionLost("lost connection to \(address): \(LineSocket.describe(errno))")
                }
                offset += sent
            }
            return nil
        }
        if let failure { throw failure }
    }

    package func send(_ bytes: [UInt8]) throws(RunnelError) {
        let result = bytes.withUnsafeBytes { raw -> RunnelError? in
            do throws(RunnelError) { try send(raw) } catch { return error }
            return nil
        }
        if let result { throw result }
    }

    /// Ends both directions at once (the server sees the close; a reader blocked in `receive`
    /// wakes with end of stream). The descriptor stays open until deinit.
    package func shutdown() { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    // MARK: Receiving

    /// The next complete line already received, without its terminator; nil when none is.
    package func bufferedLine() -> [UInt8]? {
        withNextLine { Array($0) }
    }

    /// Takes the next complete line already received and lends its bytes (without `\n` or a
    /// trailing `\r`) to `body`, valid only during the call; nil when no complete line is
    /// buffered. Copies nothing.
    package func withNextLine<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result? {
        guard scanStart < buffer.count else { return nil }
        let newline = buffer.withUnsafeBytes { bytes -> Int? in
            guard let found = memchr(bytes.baseAddress! + scanStart, 0x0A, bytes.count - scanStart) else { return nil }
            return bytes.baseAddress!.distance(to: UnsafeRawPointer(found))
        }
        guard let newline else {
            scanStart = buffer.count
            return nil
        }
        var lineEnd = newline
        if lineEnd > readStart && buffer[lineEnd - 1] == 0x0D { lineEnd -= 1 }
        let lineStart = readStart
        readStart = newline + 1
        scanStart = readStart
        return try buffer.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[lineStart..<lineEnd])) }
    }

    /// Waits up to `timeoutMilliseconds` (negative: forever) for data and reads what is there.
    /// Returns false on timeout or when a signal interrupted the wait; throws when the server
    /// closed the connection or it failed.
    package func receive(timeoutMilliseconds: Int32) throws(RunnelError) -> Bool {
        if ioLock.withLock({ _ in tls?.hasBufferedInput != true }) {
            var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pollFD, 1, timeoutMilliseconds)
            if ready < 0 {
                if errno == EINTR { return false }
                throw .connectionLost("poll failed: \(LineSocket.describe(errno))")
            }
            if ready == 0 { return false }
        }
        compact()
        let received: Int
        if let tls {
            let chunk = chunk
            let read = ioLock.withLock { _ -> Result<Int?, TLSError> in
                do throws(TLSError) { return .success(try tls.read(into: chunk)) } catch { return .failure(error) }
            }
            switch read {
            case .success(let count?): received = count
            case .success(nil): return false
            case .failure(let error): throw .connectionLost("lost connection to \(address): \(error)")
            }
        } else {
            received = recv(fd, chunk.baseAddress, chunk.count, 0)
        }
        if received < 0 {
            if errno == EINTR || errno == EAGAIN { return false }
            throw .connectionLost("lost connection to \(address): \(LineSocket.describe(errno))")
        }
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[0..<received]))
        if received == 0 {
            throw .connectionLost("the server closed the connection")
        }
        return true
    }

    /// Whether bytes are waiting to be read right now.
    package var hasPendingInput: Bool {
        if ioLock.withLock({ _ in tls?.hasBufferedInput == true }) { return true }
        var pollFD = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&pollFD, 1, 0) > 0
    }

    /// Drops consumed bytes once they are a large part of the buffer.
    private func compact() {
        guard readStart > 0, readStart >= buffer.count / 2 else { return }
        buffer.removeFirst(readStart)
        scanStart -= readStart
        readStart = 0
    }

    // MARK: Connecting

    private static func open(host: String, port: UInt16, _ address: String, timeoutMilliseconds: Int32)
        throws(RunnelError) -> Int32
    {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw .connectionLost("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var lastError: Int32 = ECONNREFUSED
        var current: UnsafeMutablePointer<addrinfo>? = first
        while let info = current {
            current = info.pointee.ai_next
            let fd = socket(info.pointee.ai_family, info.pointee.ai_socktype | Int32(SOCK_CLOEXEC.rawValue), 0)
            if fd < 0 {
                lastError = errno
                continue
            }
            let result = connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen, timeoutMilliseconds)
            if result == 0 {
                var one: Int32 = 1
                setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return fd
            }
            lastError = result
            Glibc.close(fd)
        }
        var message = "cannot connect to \(address): \(describe(lastError))"
        if lastError == ECONNREFUSED { message += " (is runneld running?)" }
        throw .connectionLost(message)
    }

    /// Connects `fd` within the timeout; returns 0 or the errno that stopped it. The socket is
    /// blocking again afterwards.
    private static func connect(
        _ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: socklen_t, _ timeoutMilliseconds: Int32
    ) -> Int32 {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, flags) }
        if Glibc.connect(fd, address, length) == 0 { return 0 }
        guard errno == EINPROGRESS || errno == EINTR else { return errno }
        var pollFD = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        var ready: Int32
        repeat { ready = poll(&pollFD, 1, timeoutMilliseconds) } while ready < 0 && errno == EINTR
        if ready == 0 { return ETIMEDOUT }
        if ready < 0 { return errno }
        var error: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size)
        return error
    }

    /// OpenSSL writes with its own `write(2)`, which cannot pass `MSG_NOSIGNAL`: a server gone
    /// mid-write would kill the process with SIGPIPE. So a TLS connection has SIGPIPE ignored,
    /// when it is at its default (a program that handles it keeps its handler).
    private static func ignoreBrokenPipes() {
        var current = sigaction()
        sigaction(SIGPIPE, nil, &current)
        if current.__sigaction_handler.sa_handler == nil { signal(SIGPIPE, SIG_IGN) }
    }

    package static func describe(_ code: Int32) -> String { String(cString: strerror(code)) }
}
