import RunnelServer

/// `GET /healthz`: `200` and `ok` while the server accepts work (a stopping server has closed
/// its listener); `503` while a clustered node's link to NATS is down, so a load balancer
/// sends its clients to a node whose link is up. The one path open without a token, for load
/// balancers and health checks.
final class HealthRoute: HTTPRoute {
    static let path = "/healthz"
    let methods: [HTTPMethod] = [.get, .head]
    private unowned let server: Server

    init(server: Server) { self.server = server }

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        if server.isClusterLinkDown {
            exchange.answer(.text("cluster link down", status: .serviceUnavailable))
        } else {
            exchange.answer(.text("ok"))
        }
        return nil
    }
}
