import RunnelServer

/// What answers the requests to one path of the front door (`HTTPRouter` finds it).
///
/// The front door has already checked the method against `methods`, authentication and the
/// origin by the time `start` is called. Routes that stream an answer or take the connection
/// over (Server-Sent Events, WebSocket) are routes too: `HTTPConnection.parserDidReadHead`
/// is where an upgrade request reaches its route.
///
/// Thread rules: loop thread only.
protocol HTTPRoute: AnyObject {
    /// The methods the path answers; another is `405 method_not_allowed` (and `OPTIONS`, a CORS
    /// preflight, is answered by the front door).
    var methods: [HTTPMethod] { get }

    /// Begins answering `exchange`, now or later (`exchange.answer`). Returns what reads the
    /// request's body as it arrives, or nil when the route does not read it (it is then
    /// discarded, within `max_body_bytes`).
    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)?
}

/// Reads a request's body for its route, piece by piece as it arrives. Loop thread only.
protocol HTTPBodyReader: AnyObject {
    /// The next piece of the body, valid only during the call.
    func read(_ bytes: UnsafeRawBufferPointer)
    /// The body is complete: answer, if not yet done.
    func finish()
    /// The body broke a limit (`max_body_bytes`) or was not valid HTTP: answer `failure`, if
    /// not yet answered. Nothing more is read.
    func abort(_ failure: HTTPFailure)
}
