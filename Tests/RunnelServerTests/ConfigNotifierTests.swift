import Testing

@testable import RunnelDaemon
@testable import RunnelServer

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// `SystemdNotifier` against real AF_UNIX datagram sockets, as systemd's would be.
@Suite("SystemdNotifier")
struct ConfigNotifierTests {
    /// A bound datagram socket standing in for systemd's notification socket.
    final class Receiver {
        let descriptor: Int32
        let path: String?

        /// Binds to `name` (`/path` or `@abstract`).
        init(name: String) throws {
            descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            try #require(descriptor >= 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            var bytes = Array(name.utf8)
            if bytes.first == UInt8(ascii: "@") {
                bytes[0] = 0
                path = nil
            } else {
                bytes.append(0)
                path = name
            }
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
            let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count)
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
            }
            try #require(status == 0, "bind \(name): \(String(cString: strerror(errno)))")
            // Never hang the test run: a missing datagram fails after two seconds.
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit {
            close(descriptor)
            if let path { unlink(path) }
        }

        /// The next datagram's text, or nil after the timeout.
        func receive() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard count >= 0 else { return nil }
            return String(decoding: buffer[0..<count], as: UTF8.self)
        }
    }

    static func uniqueName(_ prefix: String) -> String {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return "\(prefix)runnel-notify-\(getpid())-\(now.tv_sec)-\(now.tv_nsec)"
    }

    @Test func sendsEachStateToAFilesystemSocket() throws {
        let receiver = try Receiver(name: Self.uniqueName("/tmp/"))
        let notifier = try #require(SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.path!]))
        try notifier.ready()
        #expect(receiver.receive() == "READY=1")
        try notifier.ready(status: "listening on 127.0.0.1:7455")
        #expect(receiver.receive() == "READY=1\nSTATUS=listening on 127.0.0.1:7455")
        try notifier.status("3 connections\n2 subjects")
        #expect(receiver.receive() == "STATUS=3 connections 2 subjects")
        try notifier.stopping()
        #expect(receiver.receive() == "STOPPING=1")
        try notifier.reloading()
        let reloading = try #require(receiver.receive())
        let lines = reloading.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first == "RELOADING=1")
        #expect(lines.last?.hasPrefix("MONOTONIC_USEC=") == true)
        #expect(UInt64(lines.last?.dropFirst("MONOTONIC_USEC=".count) ?? "") ?? 0 > 0)
    }

    @Test func supportsAbstractNamespaceNames() throws {
        let name = Self.uniqueName("@")
        let receiver = try Receiver(name: name)
        try SystemdNotifier(socketPath: name).ready()
        #expect(receiver.receive() == "READY=1")
    }

    @Test func noSocketMeansNoNotifier() {
        #expect(SystemdNotifier(environment: [:]) == nil)
        #expect(SystemdNotifier(environment: ["NOTIFY_SOCKET": ""]) == nil)
    }

    @Test func failuresAreReportedNotFatal() {
        #expect(throws: SystemdNotifyError.self) {
            try SystemdNotifier(socketPath: "/tmp/\(Self.uniqueName("absent-"))").ready()
        }
        #expect(throws: SystemdNotifyError.self) { try SystemdNotifier(socketPath: "relative/path").ready() }
        #expect(throws: SystemdNotifyError.self) { try SystemdNotifier(socketPath: "@").ready() }
        let tooLong = "/tmp/" + String(repeating: "x", count: 200)
        #expect(throws: SystemdNotifyError.self) { try SystemdNotifier(socketPath: tooLong).ready() }
    }
}
