/// The passwords that top every published breach-frequency list (only those long enough to pass the length rule
/// matter), lower-cased: comparisons fold case, so `Password1` is refused like `password1`.
enum CommonPasswords {
    static let all: Set<String> = [
        "password", "password1", "password12", "password123", "password1234", "password!", "passw0rd", "p@ssw0rd",
        "p@ssword", "pa$$word", "passwort", "motdepasse", "contraseña", "wachtwoord",
        "12345678", "123456789", "1234567890", "12345678910", "0123456789", "11111111", "111111111", "00000000",
        "88888888", "87654321", "987654321", "9876543210", "12341234", "11223344", "12121212", "123123123",
        "123321123", "147258369", "159357456", "1q2w3e4r", "1q2w3e4r5t", "1qaz2wsx", "1qazxsw2", "zaq12wsx",
        "qwertyui", "qwertyuiop", "qwerty123", "qwerty12", "qwerty1234", "qwer1234", "asdfghjk", "asdfghjkl",
        "asdf1234", "zxcvbnm1", "zxcvbnmm", "1234qwer", "q1w2e3r4", "q1w2e3r4t5", "a1b2c3d4", "abcd1234",
        "abc12345", "abcdefgh", "aa123456", "iloveyou", "iloveyou1", "iloveyou2", "sunshine", "princess",
        "football", "baseball", "basketball", "superman", "batman123", "starwars", "pokemon1", "whatever",
        "trustno1", "letmein1", "letmein!", "welcome1", "welcome123", "welcome!", "changeme", "changeme1",
        "computer", "internet", "michelle", "jennifer", "jordan23", "charlie1", "michael1", "master123",
        "shadow12", "monkey123", "dragon12", "killer123", "freedom1", "liverpool", "chelsea1", "arsenal1",
        "manchester", "1password", "mypassword", "secret123", "admin123", "administrator", "adminadmin",
        "rootroot", "test1234", "testtest", "guest123", "default1", "access14", "mustang1", "corvette",
        "blink182", "hello123", "helloworld", "loveme12", "lovely123", "fuckyou1", "fuckoff1", "hunter22",
        "ashley12", "daniel12", "sophie12", "summer12", "winter12", "autumn12", "spring12", "qazwsxedc",
        "favoriteme", "favoriteme1", "ticketmaster", "rijksmuseum",
    ]
}
