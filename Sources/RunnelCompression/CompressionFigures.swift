/// What compression costs now, for `stats.compression` and `/metrics`: the WebSockets with
/// permessage-deflate and the gzip'd event streams open now, and the bytes zlib holds for the
/// whole process (`ZlibMemory`: every compressed WebSocket's deflater and inflater, the shared
/// deflaters).
///
/// Thread rules: a value. Lifetime rule: holds nothing.
package struct CompressionFigures {
    package let webSockets: Int
    package let eventStreams: Int
    package let memoryBytes: Int

    package init(webSockets: Int, eventStreams: Int, memoryBytes: Int) {
        self.webSockets = webSockets
        self.eventStreams = eventStreams
        self.memoryBytes = memoryBytes
    }
}
