import RunnelServer
import RunnelWebSocket

/// `GET /ws` with `Upgrade: websocket`: a session of the line protocol over a WebSocket
/// (`WebSocketTransport`). The handshake's checks (`WebSocketHandshake`) answer a request that
/// is not a WebSocket one; a good one is answered `101` and its connection becomes the
/// transport's. The front door has checked the origin (a page of another site is refused
/// `403 forbidden_origin`) and the token: a WebSocket without one is let in unauthenticated,
/// to send `auth` first as on TCP. A client that offers permessage-deflate gets it when
/// `compression` is on (`PerMessageDeflateAgreement`), named in the answer.
final class WebSocketRoute: HTTPRoute {
    static let path = "/ws"
    let methods: [HTTPMethod] = [.get]
    private unowned let server: Server

    init(server: Server) { self.server = server }

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        let frontDoor = exchange.frontDoor
        let key: String
        do throws(HTTPFailure) {
            key = try WebSocketHandshake.key(of: exchange.head)
        } catch {
            var response = HTTPResponse.failure(error)
            if error.status == .upgradeRequired {
                response.fields += [("Upgrade", "websocket"), ("Sec-WebSocket-Version", WebSocketHandshake.version)]
            }
            exchange.answer(response)
            return nil
        }
        var response = HTTPResponse(status: .switchingProtocols, contentType: nil, body: [])
        response.fields = [
            ("Upgrade", "websocket"), ("Connection", "Upgrade"),
            ("Sec-WebSocket-Accept", WebSocketHandshake.acceptValue(forKey: key)),
        ]
        let compression =
            server.config.compression
            ? PerMessageDeflateAgreement.negotiate(exchange.head.fieldValues("sec-websocket-extensions")) : nil
        if let compression { response.fields.append(("Sec-WebSocket-Extensions", compression.responseValue)) }
        response.fields += exchange.corsFields
        let transport = exchange.takeOver { connection in
            frontDoor.count(response)
            response.write(to: connection, closing: false)
            return WebSocketTransport(
                connection: connection, frontDoor: frontDoor, maxMessageBytes: server.config.maxLineBytes,
                compression: compression)
        }
        if let transport { server.openSession(over: transport, grant: exchange.grant) }
        return nil
    }
}
