import Foundation

/// Where `swift build` put the package's executables (mediarelay, mediarelay-load, engine-bench):
/// the directory beside the test bundle. `swift test` runs
/// `.build/<triple>/debug/mediarelayPackageTests.xctest`, so the walk goes up from the running
/// binary until a directory holds an executable `mediarelay`. The one place tests look for it.
public enum BuiltProducts {
    /// The products directory; the test bundle's own directory when none holds `mediarelay`
    /// (a test then fails on the missing file, naming it).
    public static let directory: URL = {
        let manager = FileManager.default
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().standardizedFileURL
        let start = directory
        while true {
            let candidate = directory.appendingPathComponent("mediarelay").path
            if manager.isExecutableFile(atPath: candidate) { return directory }
            let parent = directory.deletingLastPathComponent()
            if parent.path == directory.path { return start }
            directory = parent
        }
    }()

    /// The built executable `name`.
    public static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    /// The relay executable, or nil when it is not built (a test says `swift build` first).
    public static var relay: URL? {
        let url = directory.appendingPathComponent("mediarelay")
        return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
    }
}
