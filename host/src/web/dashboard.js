// The dashboard's script: signing out (a POST with the session's CSRF token). Pages are
// rendered by the server and work without it.
'use strict';

document.getElementById('sign-out')?.addEventListener('click', async () => {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  await fetch('/v1/auth/logout', {
    method: 'POST',
    headers: { 'x-csrf-token': csrf },
    credentials: 'same-origin',
  });
  location.assign('/');
});
