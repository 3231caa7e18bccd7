import RunnelProtocol
import RunnelServer

/// The body of a `DELETE /pub/SUBJECT?key=K` (version 1.3): read and let go (it means
/// nothing), then the key is removed from the map; answered `{"ok":true,"receivers":N}`, as
/// `pub` with `delete` is. Loop thread only. Lifetime rule: the exchange holds it until the
/// body has ended; it holds its publication.
final class KeyRemovalBody: HTTPBodyReader {
    private let publication: Publication

    init(_ publication: Publication) { self.publication = publication }

    func read(_ piece: UnsafeRawBufferPointer) {}

    func finish() {
        let publication = self.publication
        publication.publish([], removesKey: true, isLast: true) { receipt in
            if let failure = receipt.failure { return publication.exchange.fail(HTTPFailure(failure)) }
            publication.answer {
                var line = ServerLineWriter.reply(SessionReply(ref: nil, .published(receivers: receipt.receivers)))
                return .json(line.finish())
            }
        }
    }

    func abort(_ failure: HTTPFailure) { publication.exchange.fail(failure) }
}
