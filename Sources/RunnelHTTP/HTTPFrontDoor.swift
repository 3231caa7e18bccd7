import Runnel
import RunnelCompression
import RunnelServer
import RunnelUV
import RunnelWebSocket

/// The HTTP/1.1 front door (docs/protocol.md, "The HTTP front door"): accepts connections
/// from its listener, counts them with the server's sessions against `max_connections`,
/// routes each request after the checks every path shares (`HTTPRequestChecks`: the query,
/// authentication, `404` and `405`, CORS preflights, the origin of a change), and closes
/// connections past their time limits. A path none of runneld's own routes takes goes to the
/// files of `http_static_dir` when it is set (`StaticFilesRoute`). A request from a page whose
/// origin `http_allowed_origins` does not list is named in the log (`OriginRefusalHints`).
///
/// The time limits are checked by the server's sweep (`ServerSweep`), once a second, rather
/// than by one timer per connection re-armed per request: a request then costs a clock
/// reading, and a limit is enforced within a second of it. The same sweep ticks the event
/// streams' heartbeats (`SSETransport.tick`), so an idle stream costs no timer of its own.
///
/// Counting: a connection is the front door's ("http" in metrics) until a stream takes it
/// over (`GET /events`); from then on it is its session's ("sse"), never both.
///
/// Thread rules: loop thread only (the sweep runs there). Lifetime rule: the
/// server holds it for its life; it holds its open connections until they close.
package final class HTTPFrontDoor: FrontDoor, @unchecked Sendable {
    private unowned let server: Server
    /// Made as the first listener is served (`serve(_:)`): the page and the client module are
    /// gzip'd once then, work a server that serves no HTTP is spared.
    private lazy var router = HTTPRouter(
        exact: [
            IndexRoute.path: IndexRoute(), ClientModuleRoute.path: ClientModuleRoute(),
            HealthRoute.path: HealthRoute(server: server), "/stats": StatsRoute(server: server),
            "/subjects": SubjectsRoute(server: server), MetricsRoute.path: MetricsRoute(server: server),
            EventsRoute.path: EventsRoute(server: server), WebSocketRoute.path: WebSocketRoute(server: server),
        ],
        prefixes: [(PublishRoute.prefix, PublishRoute(server: server))])
    /// The paths the router does not take, while `http_static_dir` is set.
    private let staticFiles: StaticFilesRoute
    /// Which refused origins the log has named, over every loop's front door.
    private let originHints: Locked<OriginRefusalHints>
    /// The listeners that serve it, as the line port's answer to an HTTP request names them
    /// (`http_listen port 7456`); added as `serve(_:)` serves each.
    private var listenerNames: [String] = []
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]
    /// The streams that took over a connection, for their heartbeats.
    private var streams: [ObjectIdentifier: any HTTPStream] = [:]
    /// Values compressed once for every compressed stream that keeps no context: gzip'd event
    /// streams, and WebSockets without server context takeover (`webSocketDeflate`).
    let sharedDeflate = SharedValueDeflate()
    let webSocketDeflate: WebSocketSharedDeflate
    /// Whole answers gzip'd (`GzipBody`).
    let gzip = GzipBody()
    /// False once the server is stopping: answers then close their connections.
    private(set) var isOpen = true

    /// The front door of `server`, serving on no listener until `serve(_:)`; the line port's
    /// answer to an HTTP request then says that the server serves no HTTP. The front doors of
    /// one process's loops share `originHints`, so the log names an origin once.
    package init(server: Server, originHints: Locked<OriginRefusalHints> = Locked(OriginRefusalHints())) {
        self.server = server
        self.originHints = originHints
        webSocketDeflate = WebSocketSharedDeflate(values: sharedDeflate)
        staticFiles = StaticFilesRoute(server: server)
    }

    /// Serves the front door on `listener`, which is on the server's loop alone: its accepted
    /// connections come to `accept(_:)`. (A listener spread over a group of servers takes each
    /// front door's `acceptor`, once each has been told of it: `serving(_:)`.)
    package func serve(_ listener: TCPListener) {
        serving(Self.name(of: listener))
        listener.onAccept = acceptor
    }

    /// How the line port's answer to an HTTP request names `listener`
    /// (`http_listen port 7456`).
    package static func name(of listener: TCPListener) -> String {
        let key = listener.makeFilter == nil ? ConfigKey.httpListen : ConfigKey.httpsListen
        return "\(key.rawValue) port \(listener.port)"
    }

    /// Readies the front door to serve the listener named `name` (`name(of:)`): the routes,
    /// the server's sweep. Loop thread, before the listener's first connection arrives.
    package func serving(_ name: String) {
        server.scheduler.assertOnLoopThread()
        listenerNames.append(name)
        _ = router
        server.startSweep()
    }

    /// Takes each connection placed on the server's loop (`TCPListener.spread`).
    package var acceptor: ConnectionAcceptor { { [self] connection in accept(connection) } }

    package var connectionCount: Int { connections.count }

    /// A publisher of the server's, for a connection that publishes.
    func makePublisherGate() -> PublisherGate { PublisherGate(pauses: server.publisherPauses) }

    /// The compressed streams open now.
    package var compressionFigures: CompressionFigures {
        var webSockets = 0
        var eventStreams = 0
        for stream in streams.values where stream.isCompressed {
            if stream.transportName == "websocket" { webSockets += 1 } else { eventStreams += 1 }
        }
        return CompressionFigures(webSockets: webSockets, eventStreams: eventStreams)
    }

    /// Takes a new connection, or answers it `503` with `limit` and closes it when the server
    /// is at `max_connections` or the client's address at `max_connections_per_address`. An
    /// admitted connection counts against its address until it closes, whatever it becomes.
    func accept(_ connection: any ByteStream) {
        server.scheduler.assertOnLoopThread()
        let host = ConnectionAdmission.host(of: connection.remoteAddress)
        let admission = server.group.admission
        let refusal = isOpen ? admission.admit(from: host) : admission.limitReached
        if let refusal {
            HTTPResponse.failure(HTTPFailure(refusal, status: .serviceUnavailable))
                .write(to: connection, closing: true)
            connection.closeAfterFlush(timeout: .seconds(1))
            return
        }
        connection.onClose { admission.release(host) }
        let http = HTTPConnection(
            connection: connection, frontDoor: self, scheduler: server.scheduler,
            maxBodyBytes: server.config.maxBodyBytes)
        connections[ObjectIdentifier(http)] = http
        http.start()
    }

    /// One sweep of the server's (`ServerSweep`): connections past their time limits close,
    /// streams tick.
    package func sweep(_ now: ContinuousClock.Instant) {
        for connection in connections.values { connection.checkDeadline(now) }
        for stream in streams.values { stream.tick() }
    }

    /// Counts an answer for `/metrics`: by status, and an error answer by its code as a
    /// request error.
    func count(_ response: HTTPResponse) {
        server.stats.countHTTPResponse(status: response.status.code)
        if let code = response.errorCode { server.stats.countRequestError(code) }
    }

    /// `response` as answered to `request`: with `compression` on, gzip'd when the request's
    /// `Accept-Encoding` allows it (`HTTPResponse.encoded(gzip:)`).
    func encode(_ response: HTTPResponse, answering request: HTTPRequestHead) -> HTTPResponse {
        guard server.config.compression else { return response }
        let accepted = AcceptedEncodings(fields: request.fieldValues("accept-encoding"))
        return response.encoded(gzip: accepted.allowsGzip ? gzip : nil)
    }

    func connectionDidClose(_ connection: HTTPConnection) {
        connections[ObjectIdentifier(connection)] = nil
        server.reportIfDrained()
    }

    /// `stream` has taken `connection` over: it is counted as the stream's session now.
    func handOver(_ connection: HTTPConnection, to stream: any HTTPStream) {
        streams[ObjectIdentifier(stream)] = stream
        connections[ObjectIdentifier(connection)] = nil
    }

    func streamDidClose(_ stream: any HTTPStream) {
        streams[ObjectIdentifier(stream)] = nil
    }

    /// A WebSocket client broke the protocol (its connection closes with `code`): logged at
    /// debug level, as the line protocol's bad requests are.
    func webSocketDidFail(code: WebSocketCloseCode, reason: String, peer: String) {
        server.logger.debug(
            "websocket protocol error", metadata: ["peer": "\(peer)", "close_code": "\(code)", "reason": "\(reason)"])
    }

    /// The server is stopping: every connection closes once its queued output is written,
    /// within `timeout`.
    package func closeAllConnections(flushingWithin timeout: Duration) {
        isOpen = false
        for connection in connections.values { connection.connection.closeAfterFlush(timeout: timeout) }
    }

    /// An HTTP request line on the line port is answered with where HTTP is served, and the
    /// connection closed (`LinePortHTTPAnswer`).
    package func answer(toLinePortFirstLine line: UnsafeRawBufferPointer, on connection: any ByteStream) -> Bool {
        guard LinePortHTTPAnswer.isRequestLine(line) else { return false }
        LinePortHTTPAnswer.response(httpListeners: listenerNames).write(to: connection, closing: true)
        connection.closeAfterFlush(timeout: HTTPConnection.closeTimeout)
        return true
    }

    /// Starts answering the request whose head is `head`: the exchange, and what reads its
    /// body (nil when nothing does: it is discarded).
    func begin(_ head: HTTPRequestHead, on connection: HTTPConnection) -> (HTTPExchange, (any HTTPBodyReader)?) {
        let access = HTTPAccess(tokens: server.access, allowedOrigins: server.config.httpAllowedOrigins)
        if let origin = head.field("origin"), !access.allows(origin, host: head.field("host")) {
            nameRefused(origin, peer: connection.connection.remoteAddress)
        }
        let query = head.queryParameters()
        let credential = access.credential(of: head, query: query ?? [:], at: ProcessStatistics.wallClockSeconds())
        let grant = credential.grant
        let exchange = HTTPExchange(
            head: head, query: query ?? [:],
            corsFields: access.allowedOrigin(of: head).map(HTTPAccess.corsFields) ?? [],
            grant: grant, frontDoor: self, connection: connection)
        let facts = HTTPRequestFacts(head: head, query: query, credential: credential, route: route(for: head.path))
        let checks = HTTPRequestChecks.frontDoor(allowedOrigins: server.config.httpAllowedOrigins)
        if case .answer(let response) = checks.decide(facts) {
            exchange.answer(response)
            return (exchange, nil)
        }
        guard let route = facts.route else { preconditionFailure("the checks let a request without a route through") }
        return (exchange, route.start(exchange))
    }

    /// The route of `path`: runneld's own, which always win, else the static files' while
    /// `http_static_dir` is set.
    private func route(for path: Substring) -> (any HTTPRoute)? {
        router.route(for: path) ?? (server.config.httpStaticDir == nil ? nil : staticFiles)
    }

    /// A page of `origin`, which may not use the front door, sent a request (refused `403` if
    /// it changes something; else answered without CORS fields, so its browser keeps the answer
    /// from it): the log says what to do about it, as often as `originHints` allows.
    private func nameRefused(_ origin: String, peer: String) {
        guard let hint = OriginRefusalHints.hint(for: origin), originHints.withLock({ $0.shouldName(origin, at: .now) })
        else { return }
        server.logger.warning("\(hint)", metadata: ["peer": "\(peer)"])
    }
}
