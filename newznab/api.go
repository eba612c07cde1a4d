package newznab

import "net/http"

// serveAPI answers GET /api. (A stub until the API lands.)
func (h *Handler) serveAPI(w http.ResponseWriter, r *http.Request) {
	http.Error(w, "not yet", http.StatusNotImplemented)
}
