extension StaticString {
    /// The string's UTF-8 bytes, in place: a static string's storage never moves, so the
    /// pointer stays valid for the life of the process.
    @inline(__always)
    public var rawBytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: utf8Start, count: utf8CodeUnitCount)
    }
}
