import CNats
import Glibc

/// A cnats call that failed: what was being done, and cnats's text for its status.
package struct NATSError: Error, CustomStringConvertible {
    let doing: String
    let status: natsStatus

    package var description: String { "\(doing): \(String(cString: natsStatus_GetText(status)))" }

    static func check(_ status: natsStatus, _ doing: @autoclosure () -> String) throws(NATSError) {
        guard status == NATS_OK else { throw NATSError(doing: doing(), status: status) }
    }
}

/// A message NATS delivered, copied off cnats's message on its delivery thread: its subject,
/// reply subject (where a cluster node puts a value's origin and sequence, `ClusterLink`) and
/// payload.
struct NATSMessage: Sendable {
    let subject: String
    let reply: String?
    let payload: [UInt8]
}

/// What a `NATSConnection` tells its owner, on cnats's threads.
struct NATSHandlers: Sendable {
    /// The link went down (cnats reconnects on its own, forever) or came back.
    var linkChanged: @Sendable (_ up: Bool) -> Void
    /// A message of one of the connection's subscriptions.
    var message: @Sendable (NATSMessage) -> Void
    /// An asynchronous error: cnats's text, and whether it dropped messages (a subscription's
    /// pending limit passed).
    var error: @Sendable (_ text: String, _ dropped: Bool) -> Void
}

/// One connection to a NATS system through cnats (Debian's libnats 3.4.1), with the few calls
/// a cluster node makes: publish (with a reply subject; no headers), subscribe, flush, and
/// JetStream on the connection (`jetStream`, whose publishes carry `Nats-Msg-Id`).
///
/// cnats runs the connection on threads of its own (reader, flusher, reconnects, one delivery
/// thread for every subscription: `natsOptions_UseGlobalMessageDelivery`, and one for the link
/// and error callbacks), so its libuv adapter, with crash fixes only after 3.4.1 (nats.c #814,
/// #888), is not used; every handler runs on those threads, and the owner hands what it gets
/// to its loop.
///
/// Which calls wait: `connect` and `flush` wait for the server (call them before the loop runs,
/// or on a worker); `close` writes what is buffered. `publish` and `subscribe` append to
/// cnats's buffer, which its flusher thread writes, except that cnats writes the socket itself,
/// in the calling thread and under the connection's lock, when the buffer has no room left. A
/// publish may then wait for the socket: none runs on a loop (`ClusterSendQueue`,
/// `ClusterRetainedPublisher`).
///
/// Thread rules: every method may be called from any thread (cnats locks its connection).
/// Lifetime rule: a clustered node makes two (its link's, `ClusterLink`, and the one its
/// retained values go out on, `ClusterRetainedPublisher`); each and its handlers live until the
/// process ends (cnats's threads may still run a handler while it closes, so neither is ever
/// freed).
final class NATSConnection: @unchecked Sendable {
    private let connection: OpaquePointer
    private let handlers: Unmanaged<HandlerBox>

    /// What the C callbacks find through their closure pointer.
    private final class HandlerBox {
        let handlers: NATSHandlers
        init(_ handlers: NATSHandlers) { self.handlers = handlers }
    }

    /// Connects to one of `servers` within `timeout`, as `name` (what nats-server's monitoring
    /// shows). Blocks: call it before the
    /// loop runs. Once connected, a lost link is reconnected forever (every `reconnectWait`,
    /// with jitter), and a server gone silent is noticed within three ping intervals. Publishes
    /// are written by cnats's flusher, which waits 1 ms for more before it writes (`flush` writes
    /// at once). Without `buffersWhileReconnecting`, a publish while the link is down fails at
    /// once instead of waiting in cnats's buffer for the link to come back.
    static func connect(
        servers: [String], name: String, credentials: (token: String, user: String, password: String),
        timeout: Duration, buffersWhileReconnecting: Bool = true, handlers: NATSHandlers
    ) throws(NATSError) -> NATSConnection {
        var options: OpaquePointer?
        try NATSError.check(natsOptions_Create(&options), "creating NATS options")
        defer { natsOptions_Destroy(options) }
        let box = Unmanaged.passRetained(HandlerBox(handlers))
        let closure = box.toOpaque()
        var connection: OpaquePointer?
        do throws(NATSError) {
            try configure(
                options, servers: servers, name: name, credentials: credentials, timeout: timeout, closure: closure)
            if !buffersWhileReconnecting {
                // 0 is cnats's default (8 MiB); one byte holds no publish.
                try NATSError.check(natsOptions_SetReconnectBufSize(options, 1), "setting NATS reconnect buffer")
            }
            try NATSError.check(
                natsConnection_Connect(&connection, options), "connecting to \(servers.joined(separator: ", "))")
        } catch {
            box.release()
            throw error
        }
        return NATSConnection(connection: connection!, handlers: box)
    }

    /// Whether the connection is up now, and how many times it has come back: cnats counts a
    /// return before it lets anything out on the new connection, so a caller that finds the
    /// count unchanged sends on the connection it sent on before. The counts are read into
    /// `statistics`, the caller's, made once.
    func link(readingInto statistics: NATSStatistics) -> (isUp: Bool, returns: UInt64) {
        let isUp = natsConnection_Status(connection) == NATS_CONN_STATUS_CONNECTED
        var returns: UInt64 = 0
        guard natsConnection_GetStats(connection, statistics.pointer) == NATS_OK,
            natsStatistics_GetCounts(statistics.pointer, nil, nil, nil, nil, &returns) == NATS_OK
        else { return (false, 0) }
        return (isUp, returns)
    }

    private init(connection: OpaquePointer, handlers: Unmanaged<HandlerBox>) {
        self.connection = connection
        self.handlers = handlers
    }

    private static func configure(
        _ options: OpaquePointer?, servers: [String], name: String,
        credentials: (token: String, user: String, password: String), timeout: Duration,
        closure: UnsafeMutableRawPointer
    ) throws(NATSError) {
        var cServers = servers.map { strdup($0) }
        defer { cServers.forEach { free($0) } }
        let status = cServers.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buffer.count) {
                natsOptions_SetServers(options, $0, Int32(buffer.count))
            }
        }
        try NATSError.check(status, "setting the NATS URLs")
        try NATSError.check(natsOptions_SetName(options, name), "naming the NATS connection")
        if !credentials.token.isEmpty {
            try NATSError.check(natsOptions_SetToken(options, credentials.token), "setting cluster_token")
        }
        if !credentials.user.isEmpty || !credentials.password.isEmpty {
            try NATSError.check(
                natsOptions_SetUserInfo(options, credentials.user, credentials.password), "setting cluster_user")
        }
        try NATSError.check(
            natsOptions_SetTimeout(options, timeout.cnatsMilliseconds), "setting the NATS connect timeout")
        try NATSError.check(natsOptions_SetMaxReconnect(options, -1), "setting NATS reconnects")
        try NATSError.check(natsOptions_SetReconnectWait(options, reconnectWait), "setting the NATS reconnect wait")
        try NATSError.check(natsOptions_SetReconnectJitter(options, 250, 1000), "setting the NATS reconnect jitter")
        try NATSError.check(natsOptions_SetPingInterval(options, pingInterval), "setting the NATS ping interval")
        try NATSError.check(natsOptions_SetMaxPingsOut(options, 2), "setting the NATS pings out")
        // A node never gets back what it publishes itself: it has delivered it already.
        try NATSError.check(natsOptions_SetNoEcho(options, true), "setting NATS no-echo")
        try NATSError.check(natsOptions_UseGlobalMessageDelivery(options, true), "setting NATS message delivery")
        try NATSError.check(
            natsOptions_SetDisconnectedCB(
                options, { _, closure in NATSConnection.box(closure).handlers.linkChanged(false) }, closure),
            "setting the NATS disconnect handler")
        try NATSError.check(
            natsOptions_SetReconnectedCB(
                options, { _, closure in NATSConnection.box(closure).handlers.linkChanged(true) }, closure),
            "setting the NATS reconnect handler")
        try NATSError.check(
            natsOptions_SetErrorHandler(
                options,
                { _, _, status, closure in
                    NATSConnection.box(closure).handlers.error(
                        String(cString: natsStatus_GetText(status)), status == NATS_SLOW_CONSUMER)
                }, closure), "setting the NATS error handler")
    }

    /// Milliseconds between reconnect attempts, and between pings (two unanswered: link lost).
    static let reconnectWait: Int64 = 1000
    static let pingInterval: Int64 = 2000

    private static func box(_ closure: UnsafeMutableRawPointer?) -> HandlerBox {
        Unmanaged<HandlerBox>.fromOpaque(closure!).takeUnretainedValue()
    }

    /// Publishes `payload` on `subject` with the reply subject `reply` (nil: none), straight
    /// into cnats's buffer: no message object and no headers, each of which would cost
    /// allocations and a wake-up of cnats's collector thread. When the buffer has no room for
    /// it, cnats first writes the buffer to the socket in this thread, which may block. Fails
    /// while the link is down and cnats's reconnect buffer is full, or when the connection is
    /// closed.
    func publish(
        _ subject: UnsafePointer<CChar>, reply: UnsafePointer<CChar>?, payload: UnsafeRawBufferPointer
    ) throws(NATSError) {
        let status = natsConnection_PublishRequest(
            connection, subject, reply, payload.baseAddress, Int32(payload.count))
        guard status == NATS_OK else { throw NATSError(doing: "publishing", status: status) }
    }

    /// The most bytes the NATS server takes in one message's payload (it says so on connecting).
    var maxPayload: Int { Int(natsConnection_GetMaxPayload(connection)) }

    /// Subscribes to `subject` (NATS wildcards allowed): its messages go to the handlers'
    /// `message`. The subscription's pending limits are cnats's defaults (65,536 messages,
    /// 64 MiB); past them cnats drops and reports through `error`.
    func subscribe(_ subject: String) throws(NATSError) -> NATSSubscription {
        var subscription: OpaquePointer?
        try NATSError.check(
            natsConnection_Subscribe(
                &subscription, connection, subject,
                { _, _, message, closure in NATSConnection.deliver(message, to: NATSConnection.box(closure)) },
                handlers.toOpaque()), "subscribing to \(subject)")
        return NATSSubscription(adopting: subscription!)
    }

    /// Writes what is buffered at once, and waits (at most `timeout`) until the server has read
    /// it: a PING and its PONG. Blocks: a worker's or a queue's thread, never a loop's.
    func flush(timeout: Duration) throws(NATSError) {
        try NATSError.check(
            natsConnection_FlushTimeout(connection, timeout.cnatsMilliseconds),
            "waiting for NATS to read what was sent")
    }

    /// JetStream on this connection, its requests answered within `wait`.
    func jetStream(wait: Duration, handlers: NATSJetStreamHandlers) throws(NATSError) -> NATSJetStream {
        try NATSJetStream(connection: connection, wait: wait, handlers: handlers)
    }

    private static func deliver(_ message: OpaquePointer?, to box: HandlerBox) {
        defer { natsMsg_Destroy(message) }
        let subject = String(cString: natsMsg_GetSubject(message))
        let count = Int(natsMsg_GetDataLength(message))
        let payload: [UInt8] =
            if count > 0, let data = natsMsg_GetData(message) {
                [UInt8](UnsafeRawBufferPointer(start: data, count: count))
            } else {
                []
            }
        let reply = natsMsg_GetReply(message).map { String(cString: $0) }
        box.handlers.message(NATSMessage(subject: subject, reply: reply, payload: payload))
    }

    /// Closes the connection (the process is stopping): what it has buffered is flushed, and
    /// its handlers are called no more.
    func close() {
        natsConnection_Close(connection)
    }
}

/// One NATS subscription. Thread rules: any thread. Lifetime rule: `unsubscribe()` ends it
/// and frees it; call it once.
struct NATSSubscription: @unchecked Sendable {
    private let subscription: OpaquePointer

    init(adopting subscription: OpaquePointer) { self.subscription = subscription }

    func unsubscribe() {
        _ = natsSubscription_Unsubscribe(subscription)
        natsSubscription_Destroy(subscription)
    }
}

/// Where cnats copies a connection's counters (`NATSConnection.link(readingInto:)`), made once
/// by its reader rather than at every read. Thread rules: one thread at a time, its owner's.
/// Lifetime rule: freed with it.
final class NATSStatistics {
    let pointer: OpaquePointer

    init() throws(NATSError) {
        var statistics: OpaquePointer?
        try NATSError.check(natsStatistics_Create(&statistics), "making a statistics buffer")
        pointer = statistics!
    }

    deinit { natsStatistics_Destroy(pointer) }
}

extension Duration {
    /// The duration as cnats takes a timeout: whole milliseconds, at least 1.
    var cnatsMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
