/** Entry point of the OAuth 2 + PKCE variant of the integration (set `main` to `dist/indexOAuth.js` to push it). */
import * as App from "./App.js"

export default App.withOAuth
