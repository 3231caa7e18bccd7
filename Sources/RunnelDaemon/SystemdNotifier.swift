#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Tells systemd about the daemon's state (`sd_notify(3)`) without linking libsystemd.
///
/// systemd passes the address of its notification socket in `NOTIFY_SOCKET`: a filesystem path
/// (`/run/systemd/notify`) or an abstract socket name written with a leading `@`. Each message is
/// one AF_UNIX datagram of newline-separated `KEY=VALUE` assignments. A socket is opened per
/// message: the daemon notifies a handful of times in its life, and no descriptor stays open
/// to leak into children. Immutable and `Sendable`; `notify` may be called from any thread and
/// blocks only for one local `sendto`.
public struct SystemdNotifier: Sendable, Equatable {
    /// The address from `NOTIFY_SOCKET`.
    public let socketPath: String

    /// A notifier for `socketPath` (`/path` or `@abstract-name`).
    public init(socketPath: String) { self.socketPath = socketPath }

    /// The notifier for `environment["NOTIFY_SOCKET"]`, or `nil` when the daemon was not started
    /// by systemd with `Type=notify` (unset or empty variable).
    public init?(environment: [String: String]) {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        self.init(socketPath: path)
    }

    /// The notifier for this process's `NOTIFY_SOCKET`, or `nil` when it is not set.
    public static func fromProcessEnvironment() -> SystemdNotifier? {
        guard let value = getenv("NOTIFY_SOCKET") else { return nil }
        return SystemdNotifier(environment: ["NOTIFY_SOCKET": String(cString: value)])
    }

    /// Start-up is finished: the listener is bound and the service can take connections.
    public func ready(status: String? = nil) throws(SystemdNotifyError) {
        try notify(["READY=1"] + (status.map { ["STATUS=\(Self.oneLine($0))"] } ?? []))
    }

    /// Shutdown has begun (SIGTERM).
    public func stopping() throws(SystemdNotifyError) { try notify(["STOPPING=1"]) }

    /// A reload has begun (SIGHUP). `MONOTONIC_USEC` is what `Type=notify-reload` requires to
    /// match the message to its reload request; send `ready()` when the reload is done.
    public func reloading() throws(SystemdNotifyError) {
        try notify(["RELOADING=1", "MONOTONIC_USEC=\(Self.monotonicMicroseconds())"])
    }

    /// A one-line human-readable status (`systemctl status` shows it).
    public func status(_ text: String) throws(SystemdNotifyError) { try notify(["STATUS=\(Self.oneLine(text))"]) }

    /// Sends `assignments` (each `KEY=VALUE`) as one datagram.
    public func notify(_ assignments: [String]) throws(SystemdNotifyError) {
        try send(assignments.joined(separator: "\n"))
    }

    /// Sends `message` verbatim as one datagram to `socketPath`.
    public func send(_ message: String) throws(SystemdNotifyError) {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        let isAbstract = pathBytes.first == UInt8(ascii: "@")
        guard isAbstract || pathBytes.first == UInt8(ascii: "/") else {
            throw SystemdNotifyError("NOTIFY_SOCKET \"\(socketPath)\" is neither a path nor an @abstract name")
        }
        // Abstract names start with a NUL byte and are not NUL-terminated; paths are.
        if isAbstract { pathBytes[0] = 0 } else { pathBytes.append(0) }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count <= capacity, pathBytes.count > 1 else {
            throw SystemdNotifyError("NOTIFY_SOCKET \"\(socketPath)\" does not fit a unix socket address")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            buffer.copyBytes(from: pathBytes)
        }
        let addressLength = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + pathBytes.count)

        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw SystemdNotifyError("socket: \(Self.errorText())") }
        defer { close(descriptor) }
        let bytes = Array(message.utf8)
        var sent: Int
        repeat {
            sent = bytes.withUnsafeBytes { payload in
                withUnsafePointer(to: &address) { pointer in
                    pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                        sendto(
                            descriptor, payload.baseAddress, payload.count, Int32(MSG_NOSIGNAL), socketAddress,
                            addressLength)
                    }
                }
            }
        } while sent < 0 && errno == EINTR
        guard sent == bytes.count else {
            throw SystemdNotifyError("sendto \(socketPath): \(sent < 0 ? Self.errorText() : "short write")")
        }
    }

    /// Status text must stay on one line: each line of the datagram is an assignment.
    private static func oneLine(_ text: String) -> String {
        String(text.map { $0.isNewline ? " " : $0 })
    }

    private static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }

    private static func errorText() -> String { String(cString: strerror(errno)) }
}

/// Why a systemd notification could not be sent. The daemon logs it and carries on: systemd
/// notices a missing `READY=1` itself.
public struct SystemdNotifyError: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
