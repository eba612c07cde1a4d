package newznab

import "net/http"

// The search page. (Stubs until the page lands.)

func (h *Handler) servePage(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not yet", http.StatusNotImplemented)
}

func (h *Handler) serveDetails(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not yet", http.StatusNotImplemented)
}

func (h *Handler) serveLogin(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not yet", http.StatusNotImplemented)
}

func (h *Handler) serveLogout(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not yet", http.StatusNotImplemented)
}
