"""The application shell: what holds the tabs together. Starting the app (``application``: the QApplication
and ``main``, the ``nnconsole-gui`` entry point, after ``qt_libraries`` has checked the system libraries Qt
needs), the main window with its menus and tabs (``main_window``) sized to its screen (``window_geometry``), the start page with its gallery of network thumbnails and the new-project chooser
(``start_page``, ``thumbnails``, ``templates_dialog``), the app's settings (``settings``), the Help menu's pages (``help_pages``), every modal question behind one
replaceable function (``dialogs``), the exception hook (``error_hook``) and garbage collection kept on the GUI
thread (``main_thread_gc``). It holds no project logic of its own: that is ``document``'s, and starting the
engine's CLI is ``bridge``'s.
"""
