import CLibUV
import Dispatch
import Runnel
import RunnelBytes

/// A listening TCP socket; accepted connections arrive through `onAccept` on the loop thread,
/// or, spread over a group's loops (`spread(over:acceptors:)`), through each loop's acceptor on
/// that loop's thread.
///
/// Thread rules: `bind` may be called from any thread (it runs on the loop thread and waits,
/// or runs inline when called there or before the loop runs); `close()` from any thread;
/// `onAccept` and `spread` are set, and `onAccept` called, on the loop thread.
///
/// Lifetime rule: the listener is retained through `handle->data` from `uv_tcp_init` until
/// the close callback, which releases it and frees the handle; `close()` stops accepting. An
/// accepted connection that nobody takes (no `onAccept`) is closed at once.
public final class TCPListener: HandleOwner, @unchecked Sendable {
    private let loop: LoopScheduler
    private let handle: UnsafeMutablePointer<uv_tcp_t>
    private var isOpen = true
    /// The configuration accepted connections get; a change applies to the connections
    /// accepted after it (loop thread).
    public var connectionConfiguration: TCPConnection.Configuration
    /// The address bound, and the port actually bound (the one chosen, for port 0).
    public let host: String
    public private(set) var port = 0

    /// Makes the filter (TLS) each accepted connection gets before anyone sees it; nil for
    /// none. A throw closes the connection. Set and called on the loop thread; a change applies
    /// to the connections accepted after it (a reloaded certificate).
    public var makeFilter: (() throws -> any ConnectionFilter)?

    /// Called on the loop thread with each accepted connection.
    public var onAccept: ((TCPConnection) -> Void)?
    /// The loops accepted connections are spread over, and each one's acceptor; when set,
    /// each connection goes to the group (placed, filtered) instead of `onAccept`.
    private var spread: (group: LoopGroup, acceptors: [ConnectionAcceptor])?

    private init(loop: LoopScheduler, host: String, configuration: TCPConnection.Configuration) throws {
        self.loop = loop
        self.host = host
        self.connectionConfiguration = configuration
        handle = .allocate(capacity: 1)
        loop.handles.ownerCreated()
        let status = loop.isShuttingDown ? UV_ECANCELED.rawValue : uv_tcp_init(loop.uvLoop, handle)
        if status < 0 {
            isOpen = false
            handle.deallocate()
            throw UVError(code: status, operation: "uv_tcp_init")
        }
        handle.pointee.data = Unmanaged.passRetained(self).toOpaque()
        loop.handles.register(self)
    }

    deinit { loop.handles.ownerDestroyed() }

    /// Listens on `host` (a numeric IPv4 or IPv6 address; "::" or "0.0.0.0" for any) and
    /// `port` (0 for a free one; `port` then tells which).
    public static func bind(
        host: String, port: Int, backlog: Int32 = 1024,
        configuration: TCPConnection.Configuration = .init(), on loop: EventLoop
    ) throws -> TCPListener {
        let scheduler = loop.scheduler
        let open: @Sendable () -> Result<TCPListener, any Error> = {
            Result {
                guard !scheduler.isShuttingDown else { throw UVError(code: UV_ECANCELED.rawValue, operation: "bind") }
                let listener = try TCPListener(loop: scheduler, host: host, configuration: configuration)
                do {
                    try listener.listen(port: port, backlog: backlog)
                } catch {
                    listener.close()
                    throw error
                }
                return listener
            }
        }
        if scheduler.isOnLoopThread || !loop.hasStarted {
            return try open().get()
        }
        let result = Locked<Result<TCPListener, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        scheduler.execute {
            let opened = open()
            result.withLock { $0 = opened }
            done.signal()
        }
        done.wait()
        return try result.withLock { $0! }.get()
    }

    private func listen(port requested: Int, backlog: Int32) throws {
        var address = try SocketAddress.make(host: host, port: requested)
        let status = withUnsafePointer(to: &address) { uv_tcp_bind(handle, runnel_storage_as_sockaddr($0), 0) }
        try UVError.check(status, "uv_tcp_bind \(host):\(requested)")
        try UVError.check(
            uv_listen(runnel_tcp_as_stream(handle), backlog) { server, status in
                let listener = Unmanaged<TCPListener>.fromOpaque(server!.pointee.data).takeUnretainedValue()
                listener.loop.io.noteAwake()
                if status >= 0 { listener.accept() }
            }, "uv_listen \(host):\(requested)")
        port = SocketAddress.of(handle, uv_tcp_getsockname).map(SocketAddress.port) ?? requested
    }

    private func accept() {
        guard isOpen else { return }
        guard let connection = try? TCPConnection(loop: loop, configuration: connectionConfiguration) else { return }
        guard uv_accept(runnel_tcp_as_stream(handle), connection.stream) == 0 else {
            connection.close()
            return
        }
        connection.didConnect()
        if let (group, acceptors) = spread {
            return group.place(connection, makeFilter: makeFilter, acceptors: acceptors)
        }
        if let makeFilter {
            do {
                connection.attach(filter: try makeFilter())
            } catch {
                connection.close()
                return
            }
        }
        if let onAccept {
            onAccept(connection)
        } else {
            connection.close()
        }
    }

    /// Places each connection accepted from now on on one of `group`'s loops
    /// (`LoopGroup.place`), where that loop's acceptor (`acceptors`, one per loop in the
    /// group's order) takes it. Listener's loop thread, which must be the group's first.
    public func spread(over group: LoopGroup, acceptors: [ConnectionAcceptor]) {
        loop.assertOnLoopThread()
        precondition(group.first === loop && acceptors.count == group.count, "one acceptor per loop of the group")
        spread = (group, acceptors)
    }

    /// Stops accepting and closes the socket. Any thread.
    public func close() {
        guard loop.isOnLoopThread else {
            loop.execute { [self] in close() }
            return
        }
        guard isOpen else { return }
        isOpen = false
        onAccept = nil
        spread = nil
        uv_close(runnel_tcp_as_handle(handle)) { handle in
            let listener = Unmanaged<TCPListener>.fromOpaque(handle!.pointee.data).takeRetainedValue()
            handle!.deallocate()
            listener.loop.handles.unregister(listener)
        }
    }

    func closeForShutdown() { close() }
}
