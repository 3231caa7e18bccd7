import FuzzSupport
import RunnelHTTP
import RunnelProtocol

// The HTTP front door's request reader: `HTTPRequestParser` (Debian's http_parser with the
// contract's limits) over a stream of requests, then every read of the heads it reports.
//
// The first byte chooses how the rest is cut into pieces (whole, or 1 to 127 bytes) and the
// body limit (1 KiB, or 0 to 63 bytes, so the limit is reached by short inputs). Checked:
// fed whole and fed in pieces, with each ended request's rest fed again as the connection
// does, the parser reports the same events (begin, head, the body's bytes, end) and ends the
// same way (the same failure, or an upgrade); events come in that order for each request; a
// request's body never exceeds the limit; a body is reported only for a head that announced
// one; a failure is 400, 413 or 431 with the matching code; `consumed` never exceeds what was
// given; a head's field names are lower-case, its target under 16 KiB, and its query and
// path decode or fail without trapping.

/// What the parser reported, with bodies joined so cuts in the input do not show.
private final class Recorder: HTTPRequestParserDelegate {
    enum Event: Equatable {
        case begin
        case head(target: String, hasBody: Bool, keepsAlive: Bool, isUpgrade: Bool)
        case body([UInt8])
        case end
    }
    var events: [Event] = []
    var bodyBytes = 0
    var bodyAnnounced = false

    func parserDidBeginRequest() {
        require(events.last == nil || events.last == .end, "a request began inside another: \(events.suffix(2))")
        events.append(.begin)
        bodyBytes = 0
    }

    func parserDidReadHead(_ head: HTTPRequestHead) {
        require(events.last == .begin, "a head without its begin")
        let target = head.target
        require(target.utf8.count <= HTTPRequestParser.maxHeadBytes, "a target over the head limit")
        _ = head.queryParameters()
        _ = PercentDecoding.decode(head.path, plusIsSpace: false)
        for name in ["host", "origin", "authorization", "content-type", "x"] as [StaticString] {
            if let value = head.field(name) {
                require(value.first != " " && value.last != " ", "a field value with its spaces")
            }
        }
        bodyAnnounced = head.hasBody
        events.append(
            .head(target: target, hasBody: head.hasBody, keepsAlive: head.keepsAlive, isUpgrade: head.isUpgrade))
    }

    func parserDidReadBody(_ bytes: UnsafeRawBufferPointer) {
        require(bodyAnnounced, "a body for a head that announced none")
        bodyBytes += bytes.count
        if case .body(let earlier) = events.last {
            events[events.count - 1] = .body(earlier + Array(bytes))
        } else {
            require(events.last.map { if case .head = $0 { true } else { false } } ?? false, "a body before its head")
            events.append(.body(Array(bytes)))
        }
    }

    func parserDidEndRequest() {
        require(events.last.map { $0 != .begin && $0 != .end } ?? false, "an end without a head")
        events.append(.end)
    }
}

private enum Ending: Equatable {
    case consumedAll
    case upgraded
    case failed(code: Int, error: String)
}

/// Feeds `input` in pieces of `piece` bytes; returns the events and how it ended.
private func run(_ input: UnsafeRawBufferPointer, piece: Int, maxBodyBytes: Int) -> ([Recorder.Event], Ending) {
    let recorder = Recorder()
    let parser = HTTPRequestParser(maxBodyBytes: maxBodyBytes, delegate: recorder)
    var offset = 0
    while offset < input.count {
        var chunk = UnsafeRawBufferPointer(rebasing: input[offset..<min(input.count, offset + piece)])
        offset += chunk.count
        while !chunk.isEmpty {
            switch parser.consume(chunk) {
            case .needsMore:
                chunk = UnsafeRawBufferPointer(start: nil, count: 0)
            case .requestEnded(let consumed):
                require(consumed > 0 && consumed <= chunk.count, "consumed \(consumed) of \(chunk.count)")
                require(recorder.events.last == .end, "a request ended without its end event")
                chunk = UnsafeRawBufferPointer(rebasing: chunk[consumed...])
            case .upgraded(let consumed):
                require(consumed <= chunk.count, "consumed \(consumed) of \(chunk.count)")
                return (recorder.events, .upgraded)
            case .failed(let failure):
                let expected: [Int: ErrorCode] = [400: .badRequest, 413: .limit, 431: .limit]
                require(expected[failure.status.code] == failure.error.code, "failure \(failure)")
                return (recorder.events, .failed(code: failure.status.code, error: failure.error.message))
            }
        }
        require(recorder.bodyBytes <= maxBodyBytes, "a body over the limit was handed over")
    }
    return (recorder.events, .consumedAll)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func httpFuzzerTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 0 else { return 0 }
    let control = data[0]
    let input = UnsafeRawBufferPointer(start: data + 1, count: size - 1)
    guard !input.isEmpty else { return 0 }
    let piece = control & 0x7F == 0 ? input.count : Int(control & 0x7F)
    let maxBodyBytes = control & 0x80 == 0 ? 1024 : Int(control & 0x3F)
    let whole = run(input, piece: input.count, maxBodyBytes: maxBodyBytes)
    let cut = run(input, piece: piece, maxBodyBytes: maxBodyBytes)
    require(whole.0 == cut.0, "cutting into \(piece)-byte pieces changed the events")
    require(whole.1 == cut.1, "cutting into \(piece)-byte pieces changed the ending: \(whole.1) \(cut.1)")
    return 0
}

/// The entry point SwiftPM links as `main` (see Package.swift): libFuzzer's driver.
@_cdecl("HTTPFuzzer_main")
public func httpFuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzDriver(argc, argv) { data, size in httpFuzzerTestOneInput(data!, size) }
}
