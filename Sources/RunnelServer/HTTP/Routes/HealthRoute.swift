/// `GET /healthz`: `200` and `ok` while the server accepts work (a stopping server has closed
/// its listener). The one path open without a token, for load balancers and health checks.
final class HealthRoute: HTTPRoute {
    static let path = "/healthz"
    let methods: [HTTPMethod] = [.get, .head]

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        exchange.answer(.text("ok"))
        return nil
    }
}
