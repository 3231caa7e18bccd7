/// `GET /`: a short text naming the front door's paths (the dashboard page comes later).
final class IndexRoute: HTTPRoute {
    let methods: [HTTPMethod] = [.get, .head]

    func start(_ exchange: HTTPExchange) -> (any HTTPBodyReader)? {
        exchange.answer(
            .text(
                "runneld: GET /healthz, GET /stats, GET /subjects?prefix=P, POST /pub/SUBJECT"
                    + " (docs/protocol.md, \"The HTTP front door\")\n"))
        return nil
    }
}
