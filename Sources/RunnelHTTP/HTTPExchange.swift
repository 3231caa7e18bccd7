import RunnelServer
import RunnelUV

/// One request and its answer, as a route sees it: the head, its query parameters, and
/// `answer(_:)`, called once, at any time after `HTTPRoute.start` (before the body has
/// arrived, after it, or later still, once the disk has taken a durable value).
///
/// Thread rules: loop thread only. Lifetime rule: holds its connection until answered, so a
/// route may keep the exchange past the connection's close (an answer then goes nowhere).
final class HTTPExchange {
    let head: HTTPRequestHead
    let query: [String: String]
    /// CORS fields every answer carries: set by the front door for an allowed origin.
    let corsFields: [(name: StaticString, value: String)]
    /// The rights of the request's token (the open grant when none is configured); nil when it
    /// carried none, which only the paths open to all and a WebSocket (which may send `auth`) accept.
    let grant: TokenGrant?
    /// The front door that took the request, which a stream that takes the connection over
    /// reports to.
    unowned let frontDoor: HTTPFrontDoor
    private var connection: HTTPConnection?

    init(
        head: HTTPRequestHead, query: [String: String], corsFields: [(name: StaticString, value: String)],
        grant: TokenGrant?, frontDoor: HTTPFrontDoor, connection: HTTPConnection
    ) {
        self.head = head
        self.frontDoor = frontDoor
        self.query = query
        self.corsFields = corsFields
        self.grant = grant
        self.connection = connection
    }

    var isAnswered: Bool { connection == nil }

    /// The grant of a request the front door let through only with a token: every route's but
    /// those of the paths open to all and of `/ws`.
    var checkedGrant: TokenGrant {
        guard let grant else { preconditionFailure("the front door let \(head.path) through without a token") }
        return grant
    }

    /// The connection as a publisher (`HTTPConnection.publisherGate`), while the request is
    /// not answered.
    var publisherGate: PublisherGate {
        guard let connection else { preconditionFailure("a publisher asked for after the answer") }
        return connection.publisherGate
    }

    /// Who sent the request ("127.0.0.1:50312"), while it is not answered; for logs.
    var peerDescription: String { connection?.connection.remoteAddress ?? "" }

    /// Sends `response` (with the CORS fields), once; a second answer is a bug.
    func answer(_ response: HTTPResponse) {
        guard let connection else {
            assertionFailure("an HTTP request answered twice")
            return
        }
        self.connection = nil
        var response = response
        response.fields += corsFields
        connection.send(response, for: self)
    }

    /// Takes the connection over for the stream `makeStream` returns, given the connection, in
    /// place of an answer (once, like one): the connection leaves HTTP and is the stream's
    /// from now on (`HTTPConnection.handOver`). Nil when the connection has closed meanwhile
    /// (`makeStream` is then not called).
    func takeOver<Stream: HTTPStream>(_ makeStream: (any ByteStream) -> Stream) -> Stream? {
        guard let connection else {
            assertionFailure("an HTTP request answered twice")
            return nil
        }
        self.connection = nil
        return connection.handOver(to: makeStream)
    }

    /// Stops reading the request's connection (a body's route cannot take more now) until
    /// `resumeInput()`; what was read already still arrives. Nothing once answered.
    func pauseInput() { connection?.connection.stopReading() }

    /// Reads the connection again, after `pauseInput()`.
    func resumeInput() { connection?.connection.startReading() }

    /// Answers `failure` as the error object.
    func fail(_ failure: HTTPFailure) { answer(.failure(failure)) }
}
